package sim

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider/openai"
)

// runBodies is testdata/requests (requests of three sessions of a
// discovery-deck run, as the runner stored them) as an OpenAI-compatible
// client sends them, naming model when it is not empty.
func runBodies(tb testing.TB, model string) [][]byte {
	tb.Helper()
	names, _ := filepath.Glob("testdata/requests/*.json")
	if len(names) == 0 {
		tb.Fatal("no requests in testdata/requests")
	}
	var out [][]byte
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		var req chat.Request
		if err := json.Unmarshal(b, &req); err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		if model != "" {
			req.Model = model
		}
		body, err := openai.Body(&req, openai.Format{})
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, body)
	}
	return out
}

// checkAsUnmarshal fails when decode, named name, reads b otherwise than
// json.Unmarshal does; it reports whether decode read it.
func checkAsUnmarshal[T any](t *testing.T, name string, decode func([]byte, *T) bool, b []byte) bool {
	t.Helper()
	var fast, slow T
	ok := decode(b, &fast)
	err := json.Unmarshal(b, &slow)
	if ok && err != nil {
		t.Fatalf("%s read %q, which json.Unmarshal refuses: %v", name, b, err)
	}
	if ok && !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%s read %q as\n%#v\njson.Unmarshal as\n%#v", name, b, fast, slow)
	}
	return ok
}

// checkWire is checkAsUnmarshal of decodeWire.
func checkWire(t *testing.T, body []byte) bool {
	t.Helper()
	return checkAsUnmarshal(t, "decodeWire", decodeWire, body)
}

// Each table of the wire decoder names every field of its type, by the
// field's json tag, and reads that member into that field.
func TestWireFieldTables(t *testing.T) {
	checkFieldTable(t, requestFields)
	checkFieldTable(t, messageFields)
	checkFieldTable(t, toolCallFields)
	checkFieldTable(t, functionCallFields)
	checkFieldTable(t, toolFields)
	checkFieldTable(t, functionDeclFields)
	checkFieldTable(t, responseFormatFields)
	checkFieldTable(t, jsonSchemaFields)
	checkFieldTable(t, inputLineFields)
}

func checkFieldTable[T any](t *testing.T, table []wireField[T]) {
	t.Helper()
	var v T
	rv := reflect.ValueOf(&v).Elem()
	if len(table) != rv.NumField() {
		t.Errorf("%T: %d members in the table, %d fields", v, len(table), rv.NumField())
	}
	for i := range rv.NumField() {
		tag, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("json"), ",")
		j := slices.IndexFunc(table, func(f wireField[T]) bool { return f.key == tag })
		if j < 0 {
			t.Errorf("%T: no member %q", v, tag)
		} else if p, want := reflect.ValueOf(table[j].at(&v)), rv.Field(i).Addr(); p.Type() != want.Type() || p.Pointer() != want.Pointer() {
			t.Errorf("%T: %q is not read into %s", v, tag, rv.Type().Field(i).Name)
		}
	}
}

func TestDecodeWireAsUnmarshal(t *testing.T) {
	for _, body := range runBodies(t, "") {
		if !checkWire(t, body) {
			t.Errorf("decodeWire left a run's request to json.Unmarshal: %.200s", body)
		}
	}
	read := []string{
		`{"model":"m","messages":[]}`,
		`{"model":"m","messages":null,"tools":null,"response_format":null,"seed":null}`,
		` { "model" : "m" , "messages" : [ { "role" : "user" , "content" : "a\"b\\c\/d\be\ff\ng\rh\ti\u00e9\u4e2d" } ] } `,
		`{"model":"m","messages":[{"role":"user","content":"héllo 中文 ✓"}]}`,
		`{"model":"m","messages":[{"role":"assistant","content":null,"refusal":"no","tool_calls":[]}]}`,
		`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]}]}`,
		`{"model":"m","messages":[{"role":"tool","tool_call_id":"c","name":"f","content":"x"}],"stream":false}`,
		`{"model":"m","messages":[],"temperature":0.7,"max_tokens":10,"max_completion_tokens":20,"seed":-12}`,
		`{"model":"m","messages":[],"temperature":1e-3,"seed":0}`,
		`{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object","a":[1,2.5e3,-0.1,true,false,null,"\u00ff\\"]}}}]}`,
		`{"model":"m","messages":[],"tools":[]}`,
		`{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"f","parameters":null}}]}`,
		`{"model":"m","messages":[],"response_format":{"type":"json_schema","json_schema":{"name":"n","strict":true,"schema":{"enum":["a","b"]}}}}`,
		`{"model":"m","messages":[],"response_format":{"type":"json_object"}}`,
		`{"model":"m","messages":[],"tool_choice":"auto","parallel_tool_calls":false,"user":{"x":[{}]}}`,
		`{"model":"m","messages":[],"stream":true}`,
	}
	for _, body := range read {
		if !checkWire(t, []byte(body)) {
			t.Errorf("decodeWire left %s to json.Unmarshal", body)
		}
	}
	// What decodeWire leaves to json.Unmarshal (or refuses as it does).
	left := []string{
		``, `null`, `[]`, `{`, `{"model":"m"`, `{"model":"m"}x`, `{"model":"m",}`,
		`{"model":"a","model":"b","messages":[]}`,
		`{"Model":"m","messages":[]}`,
		`{"MESSAGES":[],"model":"m"}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"}]}]}`,
		`{"model":"m","messages":[{"role":"user","content":"\ud83d\ude00"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"\xff"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"a` + "\n" + `b"}]}`,
		`{"model":"m","messages":[],"seed":1.5}`,
		`{"model":"m","messages":[],"seed":99999999999999999999}`,
		`{"model":"m","messages":[],"seed":01}`,
		`{"model":5,"messages":[]}`,
		`{"model":"m","messages":[null]}`,
		`{"model":"m","messages":[],"x":[1,]}`,
		`{"model":"m","messages":[],"x":"\q"}`,
		"\ufeff" + `{"model":"m","messages":[]}`,
	}
	for _, body := range left {
		if checkWire(t, []byte(body)) {
			t.Errorf("decodeWire read %q, which it should leave to json.Unmarshal", body)
		}
	}
}

// TestDecodeWireMutated: requests of a run with bytes changed, dropped or
// repeated are read as json.Unmarshal reads them, or left to it.
func TestDecodeWireMutated(t *testing.T) {
	t.Parallel()
	bodies := runBodies(t, "")
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("{}[]\":,\\ \nu0aZ-.e+ntfl\x00\xff")
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for range n {
		b := append([]byte(nil), bodies[rng.IntN(len(bodies))]...)
		for range 1 + rng.IntN(3) {
			i := rng.IntN(len(b))
			switch rng.IntN(3) {
			case 0:
				b[i] = alphabet[rng.IntN(len(alphabet))]
			case 1:
				b = append(b[:i], b[i+1:]...)
			default:
				j := min(len(b), i+1+rng.IntN(16))
				b = append(b[:j], append(append([]byte(nil), b[i:j]...), b[j:]...)...)
			}
		}
		checkWire(t, b)
	}
}

func FuzzDecodeWire(f *testing.F) {
	for _, b := range runBodies(f, "") {
		f.Add(b)
	}
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"a\u00e9"}],"temperature":0.5}`))
	f.Fuzz(func(t *testing.T, body []byte) { checkWire(t, body) })
}

// BenchmarkDecodeWire reads the requests of a run's sessions as the
// server receives them; json-unmarshal is how it did before.
func BenchmarkDecodeWire(b *testing.B) {
	bodies := runBodies(b, "")
	for _, bc := range []struct {
		name string
		dec  func([]byte, *wireRequest) bool
	}{{"json-unmarshal", func(body []byte, w *wireRequest) bool { return json.Unmarshal(body, w) == nil }}, {"decodeWire", decodeWire}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				var w wireRequest
				if !bc.dec(bodies[i%len(bodies)], &w) {
					b.Fatal("not read")
				}
			}
		})
	}
}

// A batch input line is read by decodeInputLine as json.Unmarshal reads
// it, or left to it: the lines budge writes (a run's requests as bodies),
// those same lines with bytes changed, and lines json.Unmarshal reads
// otherwise (keys in other letter case or given twice, escapes).
func TestDecodeInputLineAsUnmarshal(t *testing.T) {
	check := func(line []byte) bool {
		t.Helper()
		return checkAsUnmarshal(t, "decodeInputLine", decodeInputLine, line)
	}
	var lines [][]byte
	for i, body := range runBodies(t, "") {
		line := fmt.Appendf(nil, `{"custom_id":"run-s%d-t1-a0-i0","method":"POST","url":"/v1/chat/completions","body":%s}`, i, body)
		if !check(line) {
			t.Errorf("decodeInputLine left a run's line to json.Unmarshal: %.200s", line)
		}
		lines = append(lines, line)
	}
	for _, line := range []string{
		` { "custom_id" : "a\u0062" , "body" : null , "method" : "POST" , "url" : "/v1/x", "extra": [1, {"b": "c"}] } `,
		`{"custom_id":null,"body":{}}`,
		`{}`,
	} {
		if !check([]byte(line)) {
			t.Errorf("decodeInputLine left %s to json.Unmarshal", line)
		}
	}
	for _, line := range []string{
		``, `null`, `{"custom_id":"a"`, `{"custom_id":"a"}x`, `{"Custom_ID":"a"}`, `{"body":1,"body":2}`,
		`{"custom_id":5}`, `{"custom_id":"\ud83d\ude00"}`, `{"body":[1,]}`,
	} {
		if check([]byte(line)) {
			t.Errorf("decodeInputLine read %q, which it should leave to json.Unmarshal", line)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte("{}[]\":,\\ \nu0aZ-.e+ntfl\x00\xff")
	for range 2000 {
		b := append([]byte(nil), lines[rng.IntN(len(lines))]...)
		i := rng.IntN(len(b))
		b[i] = alphabet[rng.IntN(len(alphabet))]
		check(b)
	}
}
