package extract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

var answerKeys = []string{"selection", "record_ids", "explanation"}

func TestExtract(t *testing.T) {
	const obj = `{"selection":"V-17","record_ids":["AV-1"],"explanation":"ok"}`
	const other = `{"selection":"V-42","record_ids":["AV-2"],"explanation":"no"}`
	tests := []struct {
		name, reply string
		failure     string   // "" when an object is read
		repairs     []string // in order
		selection   string   // of the object read
	}{
		{"bare object", obj, "", nil, "V-17"},
		{"padded object", "\n  " + obj + "\n", "", nil, "V-17"},
		{"prose before", "Here is my answer: " + obj, "", []string{RepairSurrounding}, "V-17"},
		{"prose after", obj + "\nLet me know if you need more.", "", []string{RepairSurrounding}, "V-17"},
		{"whole-reply fence", "```json\n" + obj + "\n```", "", []string{RepairFenced}, "V-17"},
		{"fence in prose", "I checked the registry.\n```json\n" + obj + "\n```\nThanks.", "", []string{RepairFenced, RepairSurrounding}, "V-17"},
		{"think block", "<think>V-42 looks better {\"selection\":\"V-42\"}</think>\n" + obj, "", []string{RepairReasoning}, "V-17"},
		{"thinking block, upper case", "<THINKING>hmm</THINKING>" + obj, "", []string{RepairReasoning}, "V-17"},
		{"reasoning block and prose", "<reasoning>x</reasoning> Answer: " + obj, "", []string{RepairReasoning, RepairSurrounding}, "V-17"},
		{"closing tag only", "the template opened it " + other + "</think>" + obj, "", []string{RepairReasoning}, "V-17"},
		{"unterminated think", "<think>I will pick " + obj, FailReasoning, []string{RepairReasoning}, ""},
		{"only a think block", "<think>" + obj + "</think>", FailReasoning, []string{RepairReasoning}, ""},
		{"bold object", "**" + obj + "**", "", []string{RepairBold}, "V-17"},
		{"braces in strings", `{"selection":"V-17","record_ids":[],"explanation":"a } and a { inside"}`, "", nil, "V-17"},
		{"identical twice", obj + "\n\nAgain: " + obj, "", []string{RepairSurrounding, RepairDuplicate}, "V-17"},
		{"two that disagree", obj + "\nor rather\n" + other, FailConflict, nil, ""},
		{"fence and prose disagree", "```json\n" + obj + "\n```\nActually " + other, FailConflict, nil, ""},
		{"duplicate key", `{"selection":"V-17","selection":"V-42","record_ids":[],"explanation":""}`, FailDuplicateKey, nil, ""},
		{"duplicate key after case-folding", `{"selection":"V-17","Selection":"V-42","record_ids":[],"explanation":""}`, FailDuplicateKey, nil, ""},
		{"duplicate key nested", `{"selection":"V-17","record_ids":[],"explanation":"","meta":{"a":1,"A":2}}`, FailDuplicateKey, nil, ""},
		{"same key in two nested objects", `{"selection":"V-17","record_ids":[{"id":1},{"id":2}],"explanation":""}`, "", nil, "V-17"},
		{"a quoted record is no candidate", `The registry says {"record_id":"AV-1"}. ` + obj, "", []string{RepairSurrounding}, "V-17"},
		{"empty", "  \n ", FailEmpty, nil, ""},
		{"prose only", "I would pick the first one.", FailNone, nil, ""},
		{"truncated", `{"selection":"V-17","record_ids":["AV`, FailInvalid, nil, ""},
		{"an array", `["V-17"]`, FailNotObject, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Extract(tt.reply, answerKeys)
			if r.Failure != tt.failure {
				t.Fatalf("failure %q (%s), want %q", r.Failure, r.Problem, tt.failure)
			}
			if strings.Join(r.Repairs, ",") != strings.Join(tt.repairs, ",") {
				t.Errorf("repairs %v, want %v", r.Repairs, tt.repairs)
			}
			if !r.OK() {
				if r.Object != nil || r.Problem == "" {
					t.Errorf("a failure must hold no object and say why: %q %q", r.Object, r.Problem)
				}
				return
			}
			var v struct{ Selection string }
			if err := json.Unmarshal(r.Object, &v); err != nil || v.Selection != tt.selection {
				t.Errorf("object %s: selection %q (%v), want %q", r.Object, v.Selection, err, tt.selection)
			}
			s := Strict(r)
			if len(tt.repairs) == 0 && !s.OK() {
				t.Errorf("strict parsing refused a clean reply: %s", s.Problem)
			}
			if len(tt.repairs) > 0 && (s.OK() || !strings.Contains(s.Problem, tt.repairs[0]) || len(s.Repairs) != len(tt.repairs)) {
				t.Errorf("strict parsing gave %q (%s), want a failure naming %s", s.Failure, s.Problem, tt.repairs[0])
			}
		})
	}
}

func TestMatchID(t *testing.T) {
	ids := []string{"V-17", "V-42", "needs-human-choice"}
	tests := []struct {
		in, want string
		repairs  []string
	}{
		{"V-17", "V-17", nil},
		{" V-42 ", "V-42", []string{RepairIDPadding}},
		{"v-17", "V-17", []string{RepairIDCase}},
		{"**V-42**", "V-42", []string{RepairIDMarkup}},
		{" **v-42** ", "V-42", []string{RepairIDPadding, RepairIDMarkup, RepairIDCase}},
		{"`V-17`", "V-17", []string{RepairIDMarkup}},
		{"NEEDS-HUMAN-CHOICE", "needs-human-choice", []string{RepairIDCase}},
		{"V-99", "", nil},
		{"first", "", nil},
		{"P", "", nil},
	}
	for _, tt := range tests {
		got, rep, ok := MatchID(tt.in, ids)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("MatchID(%q) = %q %v, want %q", tt.in, got, ok, tt.want)
		}
		if ok && strings.Join(rep, ",") != strings.Join(tt.repairs, ",") {
			t.Errorf("MatchID(%q) repairs %v, want %v", tt.in, rep, tt.repairs)
		}
	}
	// Ids that differ only in case are never matched by folding.
	if got, _, ok := MatchID("ab", []string{"AB", "Ab"}); ok {
		t.Errorf("an ambiguous folded match resolved to %q", got)
	}
}

func TestDeclines(t *testing.T) {
	for _, s := range []string{"I can't help with choosing between people.", "I'm unable to assist.", "抱歉，我不能帮助选择。", "我无法完成这个请求"} {
		if !Declines(s) {
			t.Errorf("Declines(%q) = false", s)
		}
	}
	for _, s := range []string{"V-17 can attend the early session.", "I can help: V-17."} {
		if Declines(s) {
			t.Errorf("Declines(%q) = true", s)
		}
	}
}

// IndexToken finds a token only where no word character touches it, as
// the caller's isWord says, and goes on past the places where one does.
func TestIndexToken(t *testing.T) {
	letters := func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == 'é' }
	for _, tc := range []struct {
		s, tok string
		want   int
	}{
		{"P", "P", 0},
		{"Please give it to P.", "P", 18},
		{"PQ P", "P", 3},
		{"Please", "P", -1},
		{"give it to VOL-1", "VOL-1", 11},
		{"VOL-12", "VOL-1", 0}, // a digit does not join a token under letters
		{"给P吧", "P", 3},        // a CJK character is no letter here
		{"éP", "P", -1},        // a letter of two bytes touches it
		{"", "P", -1},
	} {
		if got := IndexToken(tc.s, tc.tok, letters); got != tc.want {
			t.Errorf("IndexToken(%q, %q) = %d, want %d", tc.s, tc.tok, got, tc.want)
		}
	}
	// With an ASCII word class, reading runes gives what reading the
	// bytes on either side gives, whatever the text's bytes.
	ascii := func(r rune) bool { return r == '-' || r >= 'a' && r <= 'z' }
	byBytes := func(s, tok string) int {
		for i := 0; ; {
			j := strings.Index(s[i:], tok)
			if j < 0 {
				return -1
			}
			at, end := i+j, i+j+len(tok)
			if (at == 0 || !ascii(rune(s[at-1]))) && (end == len(s) || !ascii(rune(s[end]))) {
				return at
			}
			i = at + 1
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"ab", "a", "b", "-", " ", "é", "\xff", "给", "B"}
	for range 20000 {
		var sb strings.Builder
		for range rng.IntN(12) {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		s := sb.String()
		for _, tok := range []string{"ab", "a", "b-a"} {
			if got, want := IndexToken(s, tok, ascii), byBytes(s, tok); got != want {
				t.Fatalf("IndexToken(%q, %q) = %d, the bytes say %d", s, tok, got, want)
			}
		}
	}
}

func TestTally(t *testing.T) {
	ta := NewTally()
	ta.Add(KindAnswer, true, nil)
	ta.Add(KindAnswer, true, []string{RepairFenced, RepairSurrounding})
	ta.Add(KindAnswer, false, []string{RepairReasoning})
	ta.Add(KindRefusal, false, nil)
	ta.Add(KindEmpty, false, nil)
	if ta.Replies != 5 || ta.Strict != 1 || ta.Tolerant != 2 || ta.Unreadable != 1 || ta.Refusals != 1 || ta.Empty != 1 ||
		ta.Repairs[RepairFenced] != 1 || ta.Repairs[RepairReasoning] != 0 {
		t.Errorf("tally %+v", ta)
	}
}

// The punctuation and key repairs: each reads the object a careful reader
// sees and is named; a key that two spellings stand for is refused, and a
// quoted record in prose never becomes an answer through a near key.
func TestExtractRepairs(t *testing.T) {
	o := Options{Keys: answerKeys, Aliases: map[string]string{"reason": "explanation"}}
	tests := []struct {
		name, reply string
		failure     string
		repair      string
		selection   string
	}{
		{"full-width punctuation", `｛＂selection＂：＂V-17＂，＂record_ids＂：［］，＂explanation＂：＂ok＂｝`, "", RepairFullWidth, "V-17"},
		{"curly quotes", `{“selection”: “V-17”, “record_ids”: [], “explanation”: “ok”}`, "", RepairFullWidth, "V-17"},
		{"trailing comma", "{\"selection\": \"V-17\", \"record_ids\": [\"AV-1\",], \"explanation\": \"ok\",}", "", RepairTrailingComma, "V-17"},
		{"single quotes", `{'selection': 'V-17', 'record_ids': [], 'explanation': "it's ok"}`, "", RepairSingleQuotes, "V-17"},
		{"nested", `{"recommendation": {"selection": "V-17", "record_ids": [], "explanation": "ok"}}`, "", RepairNested, "V-17"},
		{"misspelled key", `{"selction": "V-17", "record_ids": [], "explanation": "ok"}`, "", RepairKeyVariant, "V-17"},
		{"camel case key", `{"selection": "V-17", "recordIds": [], "explanation": "ok"}`, "", RepairKeyVariant, "V-17"},
		{"alias", `{"selection": "V-17", "record_ids": [], "reason": "ok"}`, "", RepairKeyVariant, "V-17"},
		{"two spellings of one key", `{"selection": "V-17", "selction": "V-42", "record_ids": []}`, FailDuplicateKey, "", ""},
		{"a near key alone is no answer beside a real one", `{"record_id": "AV-1"} {"selection": "V-17", "record_ids": [], "explanation": "ok"}`, "", RepairSurrounding, "V-17"},
	}
	for _, tt := range tests {
		r := ExtractWith(tt.reply, o)
		if r.Failure != tt.failure {
			t.Errorf("%s: failure %q (%s), want %q", tt.name, r.Failure, r.Problem, tt.failure)
			continue
		}
		if !r.OK() {
			continue
		}
		var got struct{ Selection string }
		json.Unmarshal(r.Object, &got)
		if got.Selection != tt.selection || !strings.Contains(strings.Join(r.Repairs, ","), tt.repair) {
			t.Errorf("%s: selection %q repairs %v, want %q with %s", tt.name, got.Selection, r.Repairs, tt.selection, tt.repair)
		}
		if s := Strict(r); s.OK() || !strings.Contains(s.Problem, tt.repair) {
			t.Errorf("%s: strict reading %+v, want refused naming %s", tt.name, s, tt.repair)
		}
	}
}

// A label's value is on its line or, when it stands alone, on the next
// line (or the next that is not blank, with skipBlank).
func TestLabelValues(t *testing.T) {
	re := regexp.MustCompile(`^\s*answer\s*:\s*(.*)$`)
	lines := strings.Split("intro\nanswer: P\nanswer:\n\n  Q  \nanswer:", "\n")
	if got := fmt.Sprintf("%q", LabelValues(lines, re, true)); got != `["P" "Q" ""]` {
		t.Errorf("skipping blank lines: %s", got)
	}
	if got := fmt.Sprintf("%q", LabelValues(lines, re, false)); got != `["P" "" ""]` {
		t.Errorf("the next line only: %s", got)
	}
}

// duplicateKeyByTokens is the reference duplicateKey is checked against:
// the same walk over encoding/json's tokens.
func duplicateKeyByTokens(raw []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	type frame struct {
		obj, expect bool
		seen        map[string]bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].expect {
			if k, ok := tok.(string); ok {
				f := strings.ToLower(strings.TrimSpace(k))
				if stack[n-1].seen[f] {
					return k, true
				}
				stack[n-1].seen[f], stack[n-1].expect = true, false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{obj: true, expect: true, seen: map[string]bool{}})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			if stack = stack[:len(stack)-1]; len(stack) == 0 {
				return "", false
			}
		}
		if t := stack[len(stack)-1]; t.obj {
			t.expect = true
		}
	}
}

// duplicateKey scans bytes; on random objects with keys that repeat in
// other cases, with escapes, non-ASCII and invalid UTF-8, and as string
// values, at any depth, it must say what the token walk says.
func TestDuplicateKeyEqualsTokenWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	keys := []string{`"a"`, `"A"`, `" a "`, `"\u0041"`, `"b\"c"`, `"B\"C"`, `"é"`, `"É"`, `"\u00e9"`, "\"\xff\"", "\"\xfe\"", `"ſ"`, `"S"`, `"k"`, `"\u212a"`, `"x\\"`, `"{"`, `"}"`, `","`}
	var value func(depth int) string
	object := func(depth int) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range rng.IntN(4) {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(" " + keys[rng.IntN(len(keys))] + " : " + value(depth+1))
		}
		b.WriteString("}")
		return b.String()
	}
	value = func(depth int) string {
		switch r := rng.IntN(6); {
		case depth < 4 && r == 0:
			return object(depth)
		case depth < 4 && r == 1:
			return "[" + value(depth+1) + ", " + value(depth+1) + ", " + object(depth+1) + "]"
		case r == 2:
			return keys[rng.IntN(len(keys))]
		case r == 3:
			return "-1.5e3"
		default:
			return "null"
		}
	}
	dups := 0
	for range 20000 {
		raw := []byte(object(0))
		if !json.Valid(raw) {
			continue
		}
		wk, wok := duplicateKeyByTokens(raw)
		k, ok := duplicateKey(raw)
		if k != wk || ok != wok {
			t.Fatalf("%s: duplicateKey %q %v, token walk %q %v", raw, k, ok, wk, wok)
		}
		if ok {
			dups++
		}
	}
	if dups < 1000 {
		t.Errorf("only %d objects with a repeated key: the test checks too little", dups)
	}
}

// indexFold looks for a needle that starts with "<" from each "<"; it must
// find what trying every place finds.
func TestIndexFoldEqualsEveryPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	pieces := []string{"<think>", "<THINK>", "</think>", "</Think", "<", "<<", "x", "é", "\u212a", "thinK>", " "}
	found := 0
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(8) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		for _, sub := range []string{"<think>", "</think>", "think>", "<"} {
			want := -1
			for i := 0; i+len(sub) <= len(s); i++ {
				if strings.EqualFold(s[i:i+len(sub)], sub) {
					want = i
					break
				}
			}
			if got := indexFold(s, sub); got != want {
				t.Fatalf("indexFold(%q, %q) = %d, want %d", s, sub, got, want)
			}
			if want >= 0 {
				found++
			}
		}
	}
	if found < 10000 {
		t.Errorf("only %d finds: the test checks too little", found)
	}
}

// Text that is not JSON, such as a string that never ends, has no
// duplicate key and does not stop the reader.
func TestDuplicateKeyOfBrokenText(t *testing.T) {
	for _, raw := range []string{`{"a":1,"a`, `{"a":1,"\`, `{"é`, `{`, `"`} {
		if k, ok := duplicateKey([]byte(raw)); ok {
			t.Errorf("%q: duplicate key %q", raw, k)
		}
	}
}
