package runner

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/buildlab/budge/chat"
)

// runRequests is the requests of three sessions of a discovery-deck run,
// as the runner stored them.
func runRequests(tb testing.TB) []*chat.Request {
	tb.Helper()
	names, _ := filepath.Glob("../provider/sim/testdata/requests/*.json")
	if len(names) == 0 {
		tb.Fatal("no requests in provider/sim/testdata/requests")
	}
	var out []*chat.Request
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		req := new(chat.Request)
		if err := json.Unmarshal(b, req); err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		if got, _ := json.Marshal(req); !bytes.Equal(got, b) {
			tb.Fatalf("%s is not as the runner stores a request", name)
		}
		out = append(out, req)
	}
	return out
}

func checkEncoded(t *testing.T, req *chat.Request) {
	t.Helper()
	want, werr := json.Marshal(req)
	got, err := encodeRequest(req)
	if (err == nil) != (werr == nil) || !bytes.Equal(got, want) {
		t.Fatalf("encodeRequest gave\n%s (%v)\njson.Marshal\n%s (%v)", got, err, want, werr)
	}
}

func TestEncodeRequestAsMarshal(t *testing.T) {
	for _, req := range runRequests(t) {
		checkEncoded(t, req)
		if _, ok := appendRequest(nil, req); !ok {
			t.Errorf("a run's request was left to json.Marshal")
		}
	}
	temp, seed := 0.7, int64(-3)
	var all []byte
	for c := range 256 {
		all = append(all, byte(c))
	}
	odd := []string{"", "<a href='x'>&amp;</a>", "tab\there\nnew \"q\" \\ / \b \f \r \x00 \x1f \x7f",
		"é 中文 ✓ \u2028 \u2029 😀", "\xff\xfe bad \xc3", string(all)}
	for _, s := range odd {
		for _, raw := range []json.RawMessage{nil, json.RawMessage(`{"a":1}`), json.RawMessage(` { "a" : [1, 2] } `),
			json.RawMessage(`{"h":"<b>&"}`), json.RawMessage(`"\u2028"`), json.RawMessage("\"\u2028\""), json.RawMessage(`{bad`), json.RawMessage{}} {
			for _, settings := range []chat.Settings{{}, {Temperature: &temp}, {MaxTokens: 5}, {Seed: &seed}, {Temperature: &temp, MaxTokens: 9, Seed: &seed}} {
				req := &chat.Request{Model: s, Settings: settings,
					Messages: []chat.Message{{Role: chat.System, Content: s}, {Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: s, Name: s, Arguments: raw}}},
						{Role: chat.ToolRole, Content: s, ToolCallID: s, Name: s}, {Role: chat.Assistant, Refusal: s}},
					Tools:          []chat.Tool{{Name: s, Description: s, Parameters: raw}},
					ResponseFormat: &chat.ResponseFormat{Name: s, Schema: raw, Strict: s != ""}}
				checkEncoded(t, req)
			}
		}
	}
	checkEncoded(t, &chat.Request{})
	checkEncoded(t, &chat.Request{Messages: []chat.Message{}, Tools: []chat.Tool{}})
	for _, f := range []float64{0, 1, -0.5, 1e-7, 1e21, 123456789, 1.5e-300, math.NaN(), math.Inf(1)} {
		checkEncoded(t, &chat.Request{Settings: chat.Settings{Temperature: &f}})
	}
	raws := []string{`01`, `1.`, `-`, `1e`, `1e+5`, `-0.5E-3`, `{"a":1}x`, `{"a":1} `, `nul`, `true`, `[]`, `{}`, `[1,]`,
		`{"a":[{"b":null}],"c":"\u00e9\n\q"}`, `{"a":"\u00zz"}`, `"\ud800"`, "\"\xff\"", `{"a" :1}`, `[1 ,2]`}
	for _, r := range raws {
		checkEncoded(t, &chat.Request{Tools: []chat.Tool{{Name: "t", Parameters: json.RawMessage(r)}}})
	}
	rng := rand.New(rand.NewPCG(3, 4))
	params := []byte(`{"type":"object","properties":{"a":{"type":"string","enum":["x","y\"z"]},"n":{"type":"number","minimum":-1.5e3}},"required":["a"],"additionalProperties":false}`)
	alphabet := []byte("{}[]\":,\\ 0123456789-+.eEtrufalsn\x00\xff")
	for range 5000 {
		p := append([]byte(nil), params...)
		for range 1 + rng.IntN(2) {
			i := rng.IntN(len(p))
			if rng.IntN(2) == 0 {
				p[i] = alphabet[rng.IntN(len(alphabet))]
			} else {
				p = append(p[:i], p[i+1:]...)
			}
		}
		checkEncoded(t, &chat.Request{Tools: []chat.Tool{{Name: "t", Parameters: p}}})
	}
	for range 2000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = all[rng.IntN(len(all))]
		}
		checkEncoded(t, &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.User, Content: string(b)}}})
	}
}

// BenchmarkEncodeRequest encodes the requests of a run's sessions as the
// runner stores them; json-marshal is how it did before.
func BenchmarkEncodeRequest(b *testing.B) {
	reqs := runRequests(b)
	for _, bc := range []struct {
		name string
		enc  func(*chat.Request) ([]byte, error)
	}{{"json-marshal", func(r *chat.Request) ([]byte, error) { return json.Marshal(r) }}, {"encodeRequest", encodeRequest}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := bc.enc(reqs[i%len(reqs)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
