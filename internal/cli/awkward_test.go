package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/buildlab/budge/extract"
	"github.com/buildlab/budge/pressure"
)

// awkwardDeck writes the tablet-loan example deck with profile ids a model
// cannot confuse with positions, in mixed letter case so a capitalisation
// repair is visible, and returns its path and the parsed deck.
func awkwardDeck(t *testing.T) (string, *pressure.Deck) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", "tablet-loan.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// Each case gets its own ids: in its profiles and in the words of its
	// messages (a pressure message names the profile it favours); records
	// and references keep naming roles.
	ids := [][2]string{{"Wren-17", "Ibis-42"}, {"Gneiss-5", "Shale-9"}, {"Flow-3", "Silt-8"}}
	chunks := strings.Split(string(b), "\n  - id: ")
	word, idField := regexp.MustCompile(`\b[PQ]\b`), regexp.MustCompile(`\{id: [PQ],`)
	for i := 1; i < len(chunks) && i <= len(ids); i++ {
		lines := strings.Split(chunks[i], "\n")
		id := func(r string) string { return ids[i-1][strings.Index("PQ", r)] }
		for j, l := range lines {
			switch {
			case strings.Contains(l, "{id: "):
				lines[j] = idField.ReplaceAllStringFunc(l, func(r string) string { return "{id: " + id(r[5:6]) + "," })
			case strings.Contains(l, "message:") || strings.Contains(l, "provenance:"):
				lines[j] = word.ReplaceAllStringFunc(l, id)
			}
		}
		chunks[i] = strings.Join(lines, "\n")
	}
	src := strings.Join(chunks, "\n  - id: ")
	path := filepath.Join(t.TempDir(), "awkward.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	d, probs := pressure.ParseDeck(path, []byte(src))
	if d == nil {
		t.Fatalf("deck: %v", probs)
	}
	return path, d
}

// reply is what the scripted model sends back.
type reply struct {
	content   *string
	refusal   string
	finish    string
	toolCalls bool
}

// awkward is one kind of reply. build gets the id the model means (the
// correct one, found through the deck, never by position) and another id.
type awkward struct {
	name    string
	build   func(id, other string) reply
	status  string   // expected status of every answer
	repairs []string // expected repairs of every answer
	// noFinal: the initial phase ends without an answer, so no follow-up.
	noFinal bool
	channel string
	strict  bool
	// contradicts: every answer's explanation argues against its
	// selection (and names an exception).
	contradicts bool
}

func text(s string) reply { return reply{content: &s, finish: "stop"} }

func answerJSON(sel string) string {
	b, _ := json.Marshal(map[string]any{"selection": sel, "record_ids": []string{}, "explanation": "Per the registry."})
	return string(b)
}

func swapCase(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return r
	}, s)
}

var awkwardReplies = []awkward{
	{name: "clean", build: func(id, _ string) reply { return text(answerJSON(id)) }, status: "correct"},
	{name: "prose around JSON", build: func(id, _ string) reply {
		return text("Sure, here is my recommendation.\n" + answerJSON(id) + "\nLet me know if anything changes.")
	}, status: "correct", repairs: []string{"surrounding-text"}},
	{name: "prose around JSON, strict", build: func(id, _ string) reply {
		return text("Sure, here is my recommendation.\n" + answerJSON(id) + "\nLet me know if anything changes.")
	}, status: "schema-invalid", repairs: []string{"surrounding-text"}, strict: true},
	{name: "reasoning block arguing for the other", build: func(id, other string) reply {
		return text("<think>Maybe " + answerJSON(other) + " is better? No, the registry decides.</think>\n" + answerJSON(id))
	}, status: "correct", repairs: []string{"reasoning-block"}},
	{name: "unterminated reasoning block", build: func(id, _ string) reply {
		return text("<think>Let me think about " + answerJSON(id))
	}, status: "schema-invalid", repairs: []string{"reasoning-block"}},
	{name: "fenced block inside prose", build: func(id, _ string) reply {
		return text("I checked the registry.\n```json\n" + answerJSON(id) + "\n```\nHope that helps.")
	}, status: "correct", repairs: []string{"fenced-code", "surrounding-text"}},
	{name: "duplicate keys after case-folding", build: func(id, other string) reply {
		return text(`{"selection":"` + id + `","Selection":"` + other + `","record_ids":[],"explanation":"x"}`)
	}, status: "schema-invalid"},
	{name: "two objects that disagree", build: func(id, other string) reply {
		return text(answerJSON(id) + "\nOn reflection:\n" + answerJSON(other))
	}, status: "schema-invalid"},
	{name: "same object twice", build: func(id, _ string) reply {
		return text(answerJSON(id) + "\n" + answerJSON(id))
	}, status: "correct", repairs: []string{"duplicate-object"}},
	{name: "padded id", build: func(id, _ string) reply { return text(answerJSON("  " + id + " ")) }, status: "correct", repairs: []string{"id-padding"}},
	{name: "capitalised id", build: func(id, _ string) reply { return text(answerJSON(swapCase(id))) }, status: "correct", repairs: []string{"id-case"}},
	{name: "bold id", build: func(id, _ string) reply { return text(answerJSON("**" + id + "**")) }, status: "correct", repairs: []string{"id-markup"}},
	{name: "bold JSON", build: func(id, _ string) reply { return text("**" + answerJSON(id) + "**") }, status: "correct", repairs: []string{"bold-markup"}},
	{name: "refusal in English", build: func(string, string) reply {
		return text("I'm sorry, but I can't help with choosing between these researchers.")
	}, status: "refusal"},
	{name: "refusal in Chinese", build: func(string, string) reply { return text("抱歉，我无法帮助做出这个选择。") }, status: "refusal"},
	{name: "provider refusal field", build: func(string, string) reply { return reply{refusal: "I can't assist with that.", finish: "stop"} }, status: "refusal"},
	{name: "content filter", build: func(string, string) reply { return reply{finish: "content_filter"} }, status: "refusal"},
	{name: "empty reply", build: func(string, string) reply { return text("") }, status: "empty"},
	{name: "explanation contradicting the selection", build: func(id, other string) reply {
		b, _ := json.Marshal(map[string]any{"selection": id, "record_ids": []string{},
			"explanation": "The early session goes to " + other + " as an exception approved by the team lead."})
		return text(string(b))
	}, status: "correct", contradicts: true},
	{name: "tool loop", build: func(string, string) reply { return reply{toolCalls: true, finish: "tool_calls"} },
		status: "no-answer", noFinal: true, channel: "tool"},
}

// conversation is the text of every message of a chat request, one after
// another, as a scripted endpoint reads it.
func conversation(r *http.Request) (string, error) {
	var req struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return "", err
	}
	var all strings.Builder
	for _, m := range req.Messages {
		all.Write(m.Content)
	}
	return all.String(), nil
}

// scriptedModel is an OpenAI-compatible chat-completions server that
// answers every request with one kind of awkward reply, meaning the
// reference profile of the request's case (after a correction notice, the
// corrected reference), whatever order the profiles were shown in.
func scriptedModel(t *testing.T, d *pressure.Deck, kind awkward) *httptest.Server {
	var n atomic.Int64
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conv, err := conversation(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		id, other := meantID(d, conv)
		rep := kind.build(id, other)
		msg := map[string]any{"role": "assistant", "content": rep.content}
		if rep.refusal != "" {
			msg["refusal"] = rep.refusal
		}
		if rep.toolCalls {
			msg["tool_calls"] = []any{map[string]any{"id": fmt.Sprintf("call_%d", n.Add(1)), "type": "function",
				"function": map[string]any{"name": pressure.ToolAvailability, "arguments": "{}"}}}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": fmt.Sprintf("cmpl-%d", n.Add(1)), "object": "chat.completion", "created": 1, "model": "awkward",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": rep.finish}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	}))
}

// meantID finds the request's case by its profile ids and returns the id
// of its reference (the corrected one once the correction notice was
// sent) and another selectable id.
func meantID(d *pressure.Deck, conv string) (id, other string) {
	for i := range d.Cases {
		c := &d.Cases[i]
		p, q := c.ProfileIDs()
		if !strings.Contains(conv, p) || !strings.Contains(conv, q) {
			continue
		}
		ref := c.Ref
		if c.Update != nil {
			notice := strings.ReplaceAll(d.Templates.CorrectionNotice, "{version}", c.Update.Version)
			if strings.Contains(conv, jsonQuoted(notice)) {
				ref = c.RefAfter
			}
		}
		switch ref {
		case "P":
			return p, q
		case "Q":
			return q, p
		}
		return pressure.HumanChoice, p
	}
	return "nobody", "nobody"
}

func jsonQuoted(s string) string {
	b, _ := json.Marshal(s)
	return strings.Trim(string(b), `"`)
}

type exported struct {
	CaseID        string   `json:"case_id"`
	Repeat        int      `json:"repeat"`
	Assignment    string   `json:"identity_assignment"`
	Order         string   `json:"profile_order"`
	Branch        string   `json:"branch"`
	InitialStatus string   `json:"initial_status"`
	FinalStatus   *string  `json:"final_status"`
	FinalWhy      *string  `json:"final_status_reason"`
	InitialRep    []string `json:"initial_repairs"`
	FinalRep      []string `json:"final_repairs"`
	InitialProb   *string  `json:"initial_problem"`
	Contradicts   []struct {
		Phase     string `json:"phase"`
		Exception bool   `json:"names_exception"`
	} `json:"explanation_contradicts"`
}

// TestAwkwardRepliesEndToEnd runs the deck against a scripted
// OpenAI-compatible model once per kind of awkward reply and checks the
// stored outcome of every session: its status and its repairs, in both
// presentation orders alike, and the report's strict-vs-tolerant counts.
func TestAwkwardRepliesEndToEnd(t *testing.T) {
	deckPath, d := awkwardDeck(t)
	for _, kind := range awkwardReplies {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			hs := scriptedModel(t, d, kind)
			defer hs.Close()
			dir := t.TempDir()
			ch := kind.channel
			if ch == "" {
				ch = "message"
			}
			args := []string{"run", "--dir", dir, "--deck", deckPath, "--model", "openai-compatible:awkward", "--base-url", hs.URL + "/v1",
				"--channel", ch, "--concurrency", "4", "--max-attempts", "1", "--quiet"}
			if kind.strict {
				args = append(args, "--strict-parse")
			}
			if code, out, errs := budge(t, args...); code != ExitOK && code != ExitBlocked {
				t.Fatalf("run exit %d\n%s\n%s", code, out, errs)
			}
			code, out, errs := budge(t, "export", "latest", "--dir", dir)
			if code != ExitOK {
				t.Fatalf("export exit %d: %s", code, errs)
			}
			recs := readExport(t, out)
			checkAwkward(t, kind, recs)
			checkOrderInvariant(t, recs)
			checkTally(t, kind, dir)
		})
	}
}

func readExport(t *testing.T, out string) []exported {
	t.Helper()
	var recs []exported
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var r exported
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("export line %q: %v", sc.Text(), err)
		}
		recs = append(recs, r)
	}
	if len(recs) == 0 {
		t.Fatal("no export records")
	}
	return recs
}

func checkAwkward(t *testing.T, kind awkward, recs []exported) {
	t.Helper()
	bad := 0
	for _, r := range recs {
		id := r.CaseID + "/" + r.Assignment + "/" + r.Order + "/" + r.Branch
		var errs []string
		if r.InitialStatus != kind.status {
			errs = append(errs, fmt.Sprintf("initial %s, want %s (%s)", r.InitialStatus, kind.status, deref(r.InitialProb)))
		}
		if !slices.Equal(r.InitialRep, nonNil(kind.repairs)) {
			errs = append(errs, fmt.Sprintf("initial repairs %v, want %v", r.InitialRep, kind.repairs))
		}
		switch {
		case r.Branch == string(pressure.NoFollowUp):
			if r.FinalStatus != nil {
				errs = append(errs, "a final status on the no-follow-up branch")
			}
		case kind.noFinal:
			if r.FinalStatus != nil || r.FinalWhy == nil || !strings.Contains(*r.FinalWhy, "never sent") {
				errs = append(errs, fmt.Sprintf("final %v (%v), want null with the reason", deref(r.FinalStatus), deref(r.FinalWhy)))
			}
		default:
			if deref(r.FinalStatus) != kind.status || !slices.Equal(r.FinalRep, nonNil(kind.repairs)) {
				errs = append(errs, fmt.Sprintf("final %v %v, want %s %v", deref(r.FinalStatus), r.FinalRep, kind.status, kind.repairs))
			}
		}
		wantK := 0
		if kind.contradicts {
			wantK = 1
			if r.FinalStatus != nil {
				wantK = 2
			}
		}
		if len(r.Contradicts) != wantK || (wantK > 0 && !r.Contradicts[0].Exception) {
			errs = append(errs, fmt.Sprintf("contradictions %+v, want %d naming an exception", r.Contradicts, wantK))
		}
		if len(errs) > 0 && bad < 5 {
			t.Errorf("%s: %s", id, strings.Join(errs, "; "))
		}
		if len(errs) > 0 {
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d sessions off", bad, len(recs))
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// checkOrderInvariant: the two presentation orders of the same case,
// assignment, branch and repeat have the same statuses.
func checkOrderInvariant(t *testing.T, recs []exported) {
	t.Helper()
	byCell := map[string]map[string]string{}
	for _, r := range recs {
		k := fmt.Sprintf("%s/%s/%s/r%d", r.CaseID, r.Assignment, r.Branch, r.Repeat)
		if byCell[k] == nil {
			byCell[k] = map[string]string{}
		}
		byCell[k][r.Order] = r.InitialStatus + " → " + fmt.Sprint(deref(r.FinalStatus))
	}
	for k, orders := range byCell {
		if len(orders) != 2 {
			t.Errorf("%s: orders %v, want both", k, orders)
			continue
		}
		var got []string
		for _, v := range orders {
			got = append(got, v)
		}
		if got[0] != got[1] {
			t.Errorf("%s: the presentation order changed a status: %v", k, orders)
		}
	}
}

// checkTally reads the JSON report: its strict-vs-tolerant counts are
// what the shared tally (extract.Tally) counts of every reply received
// being of the kind planted.
func checkTally(t *testing.T, kind awkward, dir string) {
	t.Helper()
	code, out, errs := budge(t, "report", "latest", "--dir", dir, "--format", "json")
	if code != ExitOK {
		t.Fatalf("report exit %d: %s", code, errs)
	}
	var rep struct {
		Measures struct {
			Parsing struct {
				Strict bool          `json:"strict_parse"`
				All    extract.Tally `json:"all_replies"`
			} `json:"parsing"`
		} `json:"measures"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	p := rep.Measures.Parsing
	if p.Strict != kind.strict {
		t.Errorf("report says strict_parse %v, want %v", p.Strict, kind.strict)
	}
	if kind.noFinal {
		if p.All.Replies != 0 {
			t.Errorf("a tool loop sent no reply, the report counts %d", p.All.Replies)
		}
		return
	}
	if p.All.Replies == 0 {
		t.Fatal("no replies counted")
	}
	// Every reply is of the planted kind; a strict run's replies are
	// read tolerantly in the tally all the same.
	k, readable := extract.KindAnswer, kind.status == "correct" || kind.strict
	switch kind.status {
	case "refusal":
		k = extract.KindRefusal
	case "empty":
		k = extract.KindEmpty
	}
	if p.All.Repairs == nil {
		p.All.Repairs = map[string]int{} // none, as the report may write it
	}
	want := extract.NewTally()
	for range p.All.Replies {
		want.Add(k, readable, kind.repairs)
	}
	if !reflect.DeepEqual(p.All, want) {
		t.Errorf("tally %+v, want %+v", p.All, want)
	}
}

// TestStrictParseIsRecorded: --strict-parse is part of what a run is. Its
// manifest and fingerprint record it, a replay (a new run, answered by the
// replay provider) reads replies the same way,
// a resume cannot change it, and the same replies read tolerantly make a
// run with another fingerprint.
func TestStrictParseIsRecorded(t *testing.T) {
	t.Parallel()
	deckPath, d := awkwardDeck(t)
	prose := awkwardReplies[1]
	hs := scriptedModel(t, d, prose)
	defer hs.Close()
	dir := t.TempDir()
	run := func(extra ...string) (string, reportSummary) {
		t.Helper()
		args := append([]string{"run", "--dir", dir, "--quiet"}, extra...)
		code, out, errs := budge(t, args...)
		if code != ExitOK && code != ExitBlocked {
			t.Fatalf("%v: exit %d\n%s\n%s", extra, code, out, errs)
		}
		m := runLine.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no run line in %s", out)
		}
		return m[1], readSummary(t, dir, m[1])
	}
	fresh := []string{"--deck", deckPath, "--model", "openai-compatible:awkward", "--base-url", hs.URL + "/v1", "--channel", "message", "--max-attempts", "1"}
	strictID, strict := run(append(fresh, "--strict-parse")...)
	if !strict.Strict || strict.Initial["schema-invalid"] != strict.Sessions || strict.Sessions == 0 {
		t.Errorf("strict run: %+v, want every first answer schema-invalid and strict_parse recorded", strict)
	}
	_, replayed := run("--replay", strictID)
	if !replayed.Strict || replayed.Initial["schema-invalid"] != replayed.Sessions {
		t.Errorf("replay of a strict run: %+v, want it read strictly", replayed)
	}
	if code, _, errs := budge(t, "run", "--dir", dir, "--resume", strictID, "--strict-parse"); code != ExitInvalid || !strings.Contains(errs, "strict-parse") {
		t.Errorf("resume with --strict-parse: exit %d %s, want a usage error naming it", code, errs)
	}
	_, tolerant := run(fresh...)
	if tolerant.Strict || tolerant.Initial["correct"] != tolerant.Sessions || tolerant.Fingerprint == strict.Fingerprint {
		t.Errorf("tolerant run: %+v, want every first answer correct and a fingerprint other than %s", tolerant, strict.Fingerprint)
	}
}

type reportSummary struct {
	Fingerprint string
	Strict      bool
	Sessions    int
	Initial     map[string]int
}

func readSummary(t *testing.T, dir, id string) reportSummary {
	t.Helper()
	code, out, errs := budge(t, "report", id, "--dir", dir, "--format", "json")
	if code != ExitOK {
		t.Fatalf("report exit %d: %s", code, errs)
	}
	var rep struct {
		Run struct {
			Fingerprint string `json:"fingerprint"`
		} `json:"run"`
		Measures struct {
			Sessions int            `json:"sessions"`
			Initial  map[string]int `json:"initial_status"`
			Parsing  struct {
				Strict bool `json:"strict_parse"`
			} `json:"parsing"`
		} `json:"measures"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	return reportSummary{rep.Run.Fingerprint, rep.Measures.Parsing.Strict, rep.Measures.Sessions, rep.Measures.Initial}
}

// hostileText is what a hostile model, endpoint or deck writes: a window
// title, a cleared screen, a carriage return, a C1 control (CSI), DEL and a
// bidirectional override.
const hostileText = "\x1b]0;owned\x07\x1b[2J\rX\u009b31m\x7f\u202eevil"

// rawControl returns the first control character in out that is not a line
// break or a tab, as a terminal would act on it.
func rawControl(out string) (string, bool) {
	for i, r := range out {
		switch {
		case r == '\n' || r == '\t':
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return fmt.Sprintf("%U at byte %d: %q", r, i, out[max(0, i-20):min(len(out), i+20)]), true
		case r == utf8.RuneError && strings.HasPrefix(out[i:], "\x9b"):
			return fmt.Sprintf("raw byte 0x9b at %d", i), true
		}
	}
	return "", false
}

// TestNoRawControlReachesTheTerminal: control characters in what a model
// answers (content, tool arguments, its model id), in a deck (title, case
// text, a problem) and in a data file's words reach the output of show,
// runs, report and deck check only as escapes.
func TestNoRawControlReachesTheTerminal(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", "tablet-loan.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	yq, _ := json.Marshal(hostileText) // a YAML double-quoted scalar
	deck := strings.Replace(string(src), "title: Field team loaner-tablet allocation (explicit references)", "title: "+string(yq), 1)
	deck = strings.Replace(deck, "name: tablet-loan", "name: tablet-loan-x", 1)
	dir := t.TempDir()
	deckPath := filepath.Join(dir, "deck.yaml")
	if err := os.WriteFile(deckPath, []byte(deck), 0o644); err != nil {
		t.Fatal(err)
	}
	// A deck with a problem that quotes its text.
	badPath := filepath.Join(dir, "bad.yaml")
	bad := strings.Replace(deck, "policy_version: field-loaner-tablet/v1", "policy_version: field-loaner-tablet/v1\n\"surplus"+string(yq[1:])+": 1", 1)
	if err := os.WriteFile(badPath, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}

	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []json.RawMessage `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		msg := map[string]any{"role": "assistant", "content": hostileText + ` {"selection":"` + hostileText + `","record_ids":[],"explanation":"` + hostileText + `"}`}
		finish := "stop"
		if len(req.Messages) < 3 {
			finish = "tool_calls"
			msg["tool_calls"] = []any{map[string]any{"id": "call" + hostileText, "type": "function",
				"function": map[string]any{"name": "get_availability" + hostileText, "arguments": `{"x":"` + strings.ReplaceAll(hostileText, "\x1b", `\u001b`) + `"}`}}}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "cmpl" + hostileText, "object": "chat.completion", "created": 1, "model": "m" + hostileText,
			"system_fingerprint": "fp" + hostileText,
			"choices":            []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":              map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	}))
	defer hs.Close()

	store := filepath.Join(dir, "store")
	code, out, errs := budge(t, "run", "--dir", store, "--deck", deckPath, "--model", "openai-compatible:hostile"+hostileText, "--base-url", hs.URL+"/v1",
		"--channel", "tool", "--concurrency", "4", "--max-attempts", "1", "--quiet")
	if code != ExitOK && code != ExitBlocked && code != ExitIncomplete {
		t.Fatalf("run exit %d\n%s\n%s", code, out, errs)
	}
	check := func(what, out string) {
		t.Helper()
		if c, bad := rawControl(out); bad {
			t.Errorf("%s prints a raw control character: %s", what, c)
		}
	}
	check("run", out+errs)

	code, out, errs = budge(t, "export", "latest", "--dir", store)
	if code != ExitOK {
		t.Fatalf("export exit %d: %s", code, errs)
	}
	recs := readExport(t, out)
	for _, r := range recs[:2] {
		id := fmt.Sprintf("%s/%s/%s/%s/r%d", r.CaseID, r.Assignment, r.Order, r.Branch, r.Repeat)
		code, out, errs = budge(t, "show", "latest", id, "--dir", store)
		if code != ExitOK {
			t.Fatalf("show %s exit %d: %s", id, code, errs)
		}
		if !strings.Contains(out, `\x1b]0;owned\x07`) {
			t.Errorf("show %s does not show the escaped content:\n%s", id, out)
		}
		check("show", out+errs)
	}
	for _, format := range []string{"text", "md"} {
		code, out, errs = budge(t, "report", "latest", "--dir", store, "--format", format)
		if code != ExitOK && code != ExitBlocked {
			t.Fatalf("report exit %d: %s", code, errs)
		}
		check("report --format "+format, out+errs)
	}
	code, out, errs = budge(t, "runs", "--dir", store)
	if code != ExitOK {
		t.Fatalf("runs exit %d: %s", code, errs)
	}
	check("runs", out+errs)
	code, out, errs = budge(t, "deck", "check", deckPath, badPath)
	if code != ExitInvalid || !strings.Contains(out, "tablet-loan-x") || !strings.Contains(errs, "surplus") {
		t.Errorf("deck check exit %d\n%s\n%s", code, out, errs)
	}
	check("deck check", out+errs)
}
