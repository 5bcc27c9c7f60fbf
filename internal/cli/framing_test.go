package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
	"github.com/buildlab/budge/testkit/providertest"
	"github.com/buildlab/budge/testkit/storetest"
)

func TestFramingRunReportExport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, errs := budge(t, "framing", "run", "--dir", dir, "--quiet", "--resamples", "300", "--labels", "speakers,user-llm")
	if code != ExitOK {
		t.Fatalf("framing run exit %d\n%s\n%s", code, out, errs)
	}
	m := runLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no run line:\n%s", out)
	}
	for _, want := range []string{"budge DialDefer framing report", "C1-True", "DDS", "mean of 5 domains", "conflicts by ground-truth label", "Arms"} {
		if !strings.Contains(out, want) {
			t.Errorf("framing run output lacks %q", want)
		}
	}
	// The generic report command renders framing runs too.
	code, out, errs = budge(t, "report", m[1], "--dir", dir, "--format", "json")
	if code != ExitOK {
		t.Fatalf("report exit %d: %s", code, errs)
	}
	var rep struct {
		Version  int `json:"report_version"`
		Measures struct {
			Arms []struct {
				Domains map[string]struct {
					Items    int `json:"items"`
					Accuracy map[string]struct {
						Num int `json:"numerator"`
						Den int `json:"denominator"`
					} `json:"accuracy"`
				} `json:"domains"`
			} `json:"arms"`
		} `json:"measures"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report json: %v\n%s", err, out[:200])
	}
	if rep.Version != 1 || len(rep.Measures.Arms) != 2 || rep.Measures.Arms[0].Domains["arithmetic"].Accuracy["C1-True"].Den != 12 {
		t.Errorf("report json: %+v", rep)
	}

	// Two runs: each report, then item-level agreement.
	if code, _, errs := budge(t, "framing", "run", "--dir", dir, "--quiet", "--resamples", "100", "--model", "sim:neutral"); code != ExitOK {
		t.Fatalf("second run: %s", errs)
	}
	code, out, _ = budge(t, "framing", "report", m[1], "latest", "--dir", dir, "--format", "md")
	if code != ExitOK || !strings.Contains(out, "Item-level agreement across runs") || !strings.Contains(out, "| flip in all |") {
		t.Errorf("two-run report (exit %d):\n%s", code, out)
	}

	// Every item of a run was evaluated: none may become training data.
	path := filepath.Join(t.TempDir(), "dpo.jsonl")
	code, _, errs = budge(t, "framing", "export-training", m[1], "--dir", dir, "--format", "dpo", "--test-fraction", "0.5", "-o", path)
	if code != ExitOK || !strings.Contains(errs, "wrote 0 dpo records") || !strings.Contains(errs, "evaluated in a stored run") {
		t.Fatalf("export-training of an evaluated run (exit %d): %s", code, errs)
	}
	if b, _ := os.ReadFile(path); len(b) != 0 {
		t.Errorf("export-training of an evaluated run wrote:\n%s", b)
	}
}

func TestFramingBadInputExitsTwoAndWritesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, []byte(`{"id": "a", "domain": "d", "question": "q", "correct": "x", "incorrect": "y"}`+"\n{not json\n"), 0o644)
	code, _, errs := budge(t, "framing", "run", "--dir", dir, "--quiet", "--data", bad)
	if code != ExitInvalid || !strings.Contains(errs, "bad.jsonl:2: invalid JSON") {
		t.Errorf("bad data: exit %d, stderr %s", code, errs)
	}
	if code, _, _ := budge(t, "runs", "--dir", dir); code != ExitOK {
		t.Errorf("runs exit %d", code)
	}
	if _, out, errs := budge(t, "runs", "--dir", dir); strings.Contains(out, "framing") || !strings.Contains(errs, "no runs") {
		t.Errorf("a run was stored from bad data: %s", out)
	}
	for _, args := range [][]string{
		{"framing"},
		{"framing", "nonsense"},
		{"framing", "run", "--labels", "Ann"},
		{"framing", "run", "--mitigation", "nonsense"},
		{"framing", "run", "--templates", "no-such-set"},
		{"framing", "run", "--unparseable", "maybe"},
		{"framing", "export-training", "sample", "--format", "csv"},
		{"framing", "import"},
	} {
		if code, _, _ := budge(t, append(args, "--dir", dir)...); code != ExitInvalid {
			t.Errorf("%v: exit %d, want %d", args, code, ExitInvalid)
		}
	}
}

func TestFramingImportReplicates(t *testing.T) {
	t.Parallel()
	results := filepath.Join("..", "..", "..", "shared", "data", "dialdefer", "results", "gpt-4o-mini")
	if _, err := os.Stat(results); err != nil {
		t.Skipf("reference data absent (%v); the replication itself is tested in study", err)
	}
	dir := t.TempDir()
	code, out, errs := budge(t, "framing", "import", results, "--dir", dir, "--resamples", "500")
	if code != ExitOK {
		t.Fatalf("import exit %d: %s", code, errs)
	}
	for _, want := range []string{"byte-identical to budge's rendering: 7496/7496", "recorded answer on 7496/7496 replies", "1120 answers came without their conversation", "aio by ground-truth label", "halueval_qa"} {
		if !strings.Contains(out, want) {
			t.Errorf("import report lacks %q", want)
		}
	}
	// A prompt that differs stops the import before anything is written.
	wrong := t.TempDir()
	os.WriteFile(filepath.Join(wrong, "c1_statement.tmpl"), []byte("Statement: '{question}' -> '{answer}'\n"), 0o644)
	os.WriteFile(filepath.Join(wrong, "c2_dialogue.tmpl"), []byte("{speaker1}: {question}\n{speaker2}: {answer}\nIs {speaker2} correct?"), 0o644)
	dir2 := t.TempDir()
	code, _, errs = budge(t, "framing", "import", results, "--dir", dir2, "--templates", wrong)
	if code != ExitInvalid || !strings.Contains(errs, "differ from budge's rendering") {
		t.Errorf("mismatched templates: exit %d: %s", code, errs)
	}
	if _, out, _ := budge(t, "runs", "--dir", dir2); strings.Contains(out, "framing") {
		t.Errorf("a run was stored despite mismatched prompts")
	}
}

// Naturalistic items are rendered with the template set the user chose:
// a set without a naturalistic pair is refused up front, naming the set
// and the files it lacks, never quietly replaced by budge's wording.
func TestFramingNaturalisticItemsUseTheChosenTemplates(t *testing.T) {
	t.Parallel()
	paper := filepath.Join("..", "..", "..", "shared", "data", "dialdefer", "prompts")
	if _, err := os.Stat(paper); err != nil {
		t.Skipf("reference data absent (%v)", err)
	}
	store := t.TempDir()
	code, _, errs := budge(t, "framing", "run", "--dir", store, "--quiet", "--data", "sample", "--templates", paper)
	for _, want := range []string{"6 naturalistic item(s)", "template set prompts", "has no naturalistic pair (n1_statement.tmpl and n2_dialogue.tmpl"} {
		if code != ExitInvalid || !strings.Contains(errs, want) {
			t.Errorf("exit %d, want %d and %q in: %s", code, ExitInvalid, want, errs)
		}
	}
	if _, out, _ := budge(t, "runs", "--dir", store); strings.Contains(out, "framing") {
		t.Errorf("a refused run was stored:\n%s", out)
	}

	// A directory that gives the pair is used for those items.
	dir := filepath.Join(t.TempDir(), "mine")
	os.MkdirAll(dir, 0o755)
	for _, f := range []string{"c1_statement.tmpl", "c2_dialogue.tmpl"} {
		b, _ := os.ReadFile(filepath.Join(paper, f))
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	os.WriteFile(filepath.Join(dir, "n1_statement.tmpl"), []byte("MINE-N1 {dialogue}\nClaim: {answer}\nReply in JSON with chosen_answer 1 (correct) or 2.\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "n2_dialogue.tmpl"), []byte("MINE-N2 {dialogue}\n{judger}: {answer}\nIs {judger} right? Reply in JSON with chosen_answer 1 or 2.\n"), 0o644)
	for _, c := range []struct{ set, session, want string }{
		{dir, "sample-conflicts-01/mine/-/none/C1-True", "MINE-N1 "},
		{dir, "sample-conflicts-01/mine/speakers/none/C2-Correct", "MINE-N2 "},
		{"budge-plain", "sample-conflicts-01/budge-plain/-/none/C1-True", "Is the statement right?"},
		{"budge-formal", "sample-conflicts-01/budge-formal/speakers/none/C2-Correct", "final message is correct"},
	} {
		store := t.TempDir()
		code, _, errs := budge(t, "framing", "run", "--dir", store, "--quiet", "--resamples", "50", "--data", "sample", "--templates", c.set)
		if code != ExitOK && code != ExitUnmeasured {
			t.Fatalf("%s: exit %d: %s", c.set, code, errs)
		}
		if _, out, _ := budge(t, "show", "latest", "--dir", store, c.session); !strings.Contains(out, c.want) {
			t.Errorf("%s: session %s lacks %q:\n%s", c.set, c.session, c.want, out)
		}
	}
}

// --sample-per gives data sets their own size and stratification field
// (the paper's Table 8); the sampling of every data set is in the manifest
// and every report, a replay keeps it, and an unknown data set or field is
// an error naming what exists.
func TestFramingSamplePerDataset(t *testing.T) {
	t.Parallel()
	bench := benchmarkDir(t)
	data := t.TempDir()
	for _, f := range []string{"advisorqa", "gpqa", "amqa"} {
		abs, _ := filepath.Abs(filepath.Join(bench, f+"_formatted.jsonl"))
		if err := os.Symlink(abs, filepath.Join(data, f+".jsonl")); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	run := func(args ...string) (int, string, string) {
		return budge(t, append([]string{"framing", "run", "--dir", dir, "--quiet", "--resamples", "50", "--data", data}, args...)...)
	}
	code, out, errs := run("--sample-per", "advisorqa=30:label", "--sample-per", "gpqa=21:subdomain", "--sample", "12")
	if code != ExitOK && code != ExitUnmeasured {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"sampled: advisorqa 30 of 300 (--sample-per 30, stratified by label, seed 42)",
		"sampled: gpqa 21 of 134 (--sample-per 21, stratified by subdomain, seed 42)",
		"sampled: amqa 12 of 240 (--sample (pool of data sets without --sample-per) 12, simple random, seed 42)",
		"(63 items,",
	} {
		if !strings.Contains(unwrapped(out), want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	id := runLine.FindStringSubmatch(out)[1]
	for _, format := range []string{"md", "html"} {
		if _, rep, _ := budge(t, "framing", "report", id, "--dir", dir, "--format", format); !strings.Contains(rep, "gpqa 21 of 134 (--sample-per 21, stratified by subdomain, seed 42)") {
			t.Errorf("%s report lacks the sampling", format)
		}
	}
	type drawn struct {
		Dataset, Rule, Stratify string
		Available, Drawn        int
		Seed                    uint64
	}
	var rep struct {
		Run struct{ Sampling []drawn } `json:"run"`
	}
	_, js, _ := budge(t, "framing", "report", id, "--dir", dir, "--format", "json")
	if err := json.Unmarshal([]byte(js), &rep); err != nil || len(rep.Run.Sampling) != 3 {
		t.Fatalf("json sampling %+v (%v)", rep.Run.Sampling, err)
	}
	// The run holds exactly the drawn items.
	_, items, _ := budge(t, "export", id, "--dir", dir)
	sub := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(items), "\n") {
		if strings.Contains(l, `"C1-True"`) && strings.Contains(l, `"gpqa`) {
			sub["gpqa"]++
		}
	}
	if sub["gpqa"] != 21 {
		t.Errorf("%d gpqa items exported, want 21", sub["gpqa"])
	}
	code, out, errs = budge(t, "framing", "run", "--dir", dir, "--quiet", "--replay", id)
	if code != ExitOK && code != ExitUnmeasured || !strings.Contains(out, "sampled: advisorqa 30 of 300 (--sample-per 30, stratified by label, seed 42)") {
		t.Errorf("replay (exit %d) lost the sampling: %s\n%s", code, errs, out)
	}

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--sample-per", "advisor=30"}, ExitInvalid, `no item belongs to data set "advisor"; the data's data sets are: advisorqa, amqa, gpqa`},
		{[]string{"--sample-per", "gpqa=21:level"}, ExitInvalid, `--sample-per gpqa=21:level: no item has the field "level"; the items have: domain, explanation, schema_version, split, subdomain, writer_difficulty`},
		{[]string{"--sample-per", "gpqa"}, ExitInvalid, "want DATASET=N or DATASET=N:FIELD"},
	} {
		if code, _, errs := run(c.args...); code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, want %d and %q in: %s", c.args, code, c.code, c.want, errs)
		}
	}
}

// Templates, system prompts, challenge wordings and the simulator's
// knowledge get the same encoding check as --data files: Latin-1 is refused
// naming file, line and byte with an iconv hint, UTF-16 with a byte order
// mark is decoded and reaches the model as text.
func TestFramingTextFileEncodings(t *testing.T) {
	t.Parallel()
	builtin, err := os.ReadFile(filepath.Join("..", "..", "framing", "templates", "budge", "c1_statement.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	dialogue, err := os.ReadFile(filepath.Join("..", "..", "framing", "templates", "budge", "c2_dialogue.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	statement := strings.Replace(string(builtin), "Check the statement", "Café check: check the statement", 1)
	files := []struct {
		kind, name, text, show string
		args                   func(path string) []string
	}{
		{"templates", "c1_statement.tmpl", statement, "enc-1/tmpl/-/none/C1-True",
			func(p string) []string { return []string{"--templates", filepath.Dir(p)} }},
		{"prompt", "prompt.txt", "Nobody here is a person; judge the café claim on its merits.\n", "enc-1/budge/speakers/m/C2-Correct",
			func(p string) []string { return []string{"--mitigation", "name=m,prompt=" + p} }},
		{"challenge", "push.json", `{"disagree": "Are you sure? Think again about the café. Reply in JSON as before."}`, "",
			func(p string) []string { return []string{"--challenge", "disagree", "--challenge-file", p} }},
		{"knowledge", "knowledge.jsonl", `{"question": "Which city is the capital of Australia? (café quiz)", "correct": ["Canberra"], "incorrect": ["Sydney"]}` + "\n", "",
			func(p string) []string { return []string{"--knowledge", p} }},
	}
	for _, f := range files {
		for _, enc := range []string{"latin1", "utf16le"} {
			t.Run(f.kind+"/"+enc, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "tmpl")
				os.MkdirAll(dir, 0o755)
				path := filepath.Join(dir, f.name)
				b := latin1(f.text)
				if enc == "utf16le" {
					b = utf16Bytes(f.text, false)
				}
				if err := os.WriteFile(path, b, 0o644); err != nil {
					t.Fatal(err)
				}
				if f.kind == "templates" {
					os.WriteFile(filepath.Join(dir, "c2_dialogue.tmpl"), dialogue, 0o644)
				}
				data := filepath.Join(t.TempDir(), "items.jsonl")
				os.WriteFile(data, []byte(encodingItems["jsonl"]), 0o644)
				store := t.TempDir()
				args := append([]string{"framing", "run", "--dir", store, "--quiet", "--resamples", "50", "--data", data}, f.args(path)...)
				code, _, errs := budge(t, args...)
				if enc == "latin1" {
					for _, want := range []string{path + ":1: not valid UTF-8 at byte offset", "iconv -f latin1 -t utf-8"} {
						if code != ExitInvalid || !strings.Contains(errs, want) {
							t.Errorf("exit %d, want %d and %q in: %s", code, ExitInvalid, want, errs)
						}
					}
					return
				}
				if code != ExitOK && code != ExitUnmeasured {
					t.Fatalf("exit %d: %s", code, errs)
				}
				if f.show == "" {
					return
				}
				if _, out, _ := budge(t, "show", "latest", "--dir", store, f.show); !strings.Contains(out, "café") || strings.Contains(out, "\x00") {
					t.Errorf("the session lacks the decoded text:\n%s", out)
				}
			})
		}
	}
}

// A simulator profile file (sim:FILE.yaml) is read through the same check.
func TestFramingSimProfileEncoding(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "judge.yaml")
	os.WriteFile(path, latin1("name: café judge\n"), 0o644)
	code, _, errs := budge(t, "framing", "run", "--dir", t.TempDir(), "--quiet", "--model", "sim:"+path)
	if code != ExitInvalid || !strings.Contains(errs, path+":1: not valid UTF-8 at byte offset") || !strings.Contains(errs, "iconv -f latin1") {
		t.Errorf("exit %d: %s", code, errs)
	}
}

// encodingItems is two items, the first with a non-ASCII letter on its
// first line, as JSONL and as CSV (read with --columns).
var encodingItems = map[string]string{
	"jsonl": `{"id": "enc-1", "domain": "facts", "question": "Which city is the capital of Australia? (café quiz)", "correct": "Canberra", "incorrect": "Sydney"}
{"id": "enc-2", "domain": "facts", "question": "How many legs does a spider have?", "correct": "Eight", "incorrect": "Six"}
`,
	"csv": "q,good,bad\nWhich city is the capital of Australia? (café quiz),Canberra,Sydney\nHow many legs does a spider have?,Eight,Six\n",
}

func latin1(s string) []byte {
	var b []byte
	for _, r := range s {
		b = append(b, byte(r)) // every rune here is below U+0100
	}
	return b
}

func utf16Bytes(s string, bigEndian bool) []byte {
	b := []byte{0xff, 0xfe}
	if bigEndian {
		b = []byte{0xfe, 0xff}
	}
	for _, u := range utf16.Encode([]rune(s)) {
		if bigEndian {
			b = append(b, byte(u>>8), byte(u))
		} else {
			b = append(b, byte(u), byte(u>>8))
		}
	}
	return b
}

// The documented outcomes: a file that is not UTF-8 is refused (exit 2)
// naming file, line and byte, with an iconv hint; UTF-16 with a byte order
// mark and UTF-8 with one are read.
func TestFramingDataEncodings(t *testing.T) {
	t.Parallel()
	encodings := map[string]func(string) []byte{
		"latin1":   latin1,
		"utf16le":  func(s string) []byte { return utf16Bytes(s, false) },
		"utf16be":  func(s string) []byte { return utf16Bytes(s, true) },
		"utf8-bom": func(s string) []byte { return append([]byte("\xef\xbb\xbf"), s...) },
	}
	for _, ext := range []string{"jsonl", "csv"} {
		for enc, encode := range encodings {
			t.Run(ext+"/"+enc, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), enc+"."+ext)
				if err := os.WriteFile(path, encode(encodingItems[ext]), 0o644); err != nil {
					t.Fatal(err)
				}
				dir := t.TempDir()
				args := []string{"framing", "run", "--dir", dir, "--quiet", "--resamples", "50", "--data", path}
				if ext == "csv" {
					args = append(args, "--columns", "question=q,correct=good,incorrect=bad")
				}
				code, _, errs := budge(t, args...)
				if enc != "latin1" {
					// Two items are too few to measure a judge (exit 6); what
					// matters here is that the file was read and run.
					if code != ExitOK && code != ExitUnmeasured {
						t.Fatalf("exit %d, want %d or %d: %s", code, ExitOK, ExitUnmeasured, errs)
					}
					// The model saw the text, not the bytes.
					if _, out, _ := budge(t, "show", "latest", "--dir", dir, "enc-1/budge/-/none/C1-True"); ext == "jsonl" && !strings.Contains(out, "(café quiz)") {
						t.Errorf("the prompt lacks the decoded question:\n%s", out)
					}
					return
				}
				line := 1
				if ext == "csv" {
					line = 2
				}
				for _, want := range []string{path + ":" + string(rune('0'+line)) + ": not valid UTF-8 at byte offset", "iconv -f latin1 -t utf-8"} {
					if code != ExitInvalid || !strings.Contains(errs, want) {
						t.Errorf("exit %d, want %d and %q in: %s", code, ExitInvalid, want, errs)
					}
				}
			})
		}
	}
}

// A UTF-16 file without a byte order mark is refused with a hint, never
// read as text with NUL bytes in it.
func TestFramingDataUTF16WithoutMark(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "nobom.jsonl")
	ascii := strings.ReplaceAll(encodingItems["jsonl"], "é", "e")
	os.WriteFile(path, bytes.TrimPrefix(utf16Bytes(ascii, false), []byte{0xff, 0xfe}), 0o644)
	code, _, errs := budge(t, "framing", "run", "--dir", t.TempDir(), "--quiet", "--data", path)
	if code != ExitInvalid || !strings.Contains(errs, "nobom.jsonl:1: a NUL byte at byte offset 1") || !strings.Contains(errs, "iconv -f utf-16le") {
		t.Errorf("exit %d: %s", code, errs)
	}
}

// The flip list agrees with the report's flip lists, arm by arm, and puts
// both answers' reasoning side by side.
func TestFramingExportFlipsMatchReport(t *testing.T) {
	t.Parallel()
	t.Run("default", func(t *testing.T) { testFlipsMatchReport(t, "sim") })
	t.Run("messy", func(t *testing.T) { testFlipsMatchReport(t, "sim:messy") })
}

func testFlipsMatchReport(t *testing.T, model string) {
	dir := t.TempDir()
	if code, out, errs := budge(t, "framing", "run", "--dir", dir, "--quiet", "--resamples", "50", "--mitigation", "be-honest", "--model", model); code != ExitOK && code != ExitIncomplete && code != ExitUnmeasured {
		t.Fatalf("framing run exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs := budge(t, "export", "latest", "--dir", dir, "--format", "flips")
	if code != ExitOK {
		t.Fatalf("export flips exit %d: %s", code, errs)
	}
	got := map[string][]string{}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		var r struct {
			Record, Item, Arm, Flip, Pair, C1Arm string
			C1, C2                               struct{ Condition, Reasoning string }
		}
		if err := json.Unmarshal([]byte(strings.NewReplacer(`"item_id"`, `"item"`, `"c1_arm"`, `"c1arm"`).Replace(l)), &r); err != nil {
			t.Fatal(err)
		}
		if r.Record != "flip_pair" || r.C1Arm != "none" || model == "sim" && (r.C1.Reasoning == "" || r.C2.Reasoning == "") {
			t.Errorf("record %s", l)
		}
		if want := map[string]string{"true-correct": "C1-True/C2-Correct", "false-incorrect": "C1-False/C2-Incorrect"}[r.Pair]; want != r.C1.Condition+"/"+r.C2.Condition {
			t.Errorf("pair %s has %s/%s", r.Pair, r.C1.Condition, r.C2.Condition)
		}
		if r.Flip == "deference" || r.Flip == "skepticism" {
			got[r.Arm+" "+r.Flip] = append(got[r.Arm+" "+r.Flip], r.Item)
		}
	}
	// 54 items (48 questions, 6 conflicts) × 2 arms × 2 pairs.
	if len(lines) != 54*2*2 {
		t.Errorf("%d flip records, want %d", len(lines), 54*2*2)
	}

	_, out, _ = budge(t, "report", "latest", "--dir", dir, "--format", "json")
	var rep struct {
		Measures struct {
			Arms []struct {
				Mitigation string
				Domains    map[string]struct {
					Deference  []string `json:"deference_flips"`
					Skepticism []string `json:"skepticism_flips"`
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	for _, a := range rep.Measures.Arms {
		for _, c := range a.Domains {
			want[a.Mitigation+" deference"] = append(want[a.Mitigation+" deference"], c.Deference...)
			want[a.Mitigation+" skepticism"] = append(want[a.Mitigation+" skepticism"], c.Skepticism...)
		}
	}
	for k := range want {
		sort.Strings(want[k])
		sort.Strings(got[k])
		if strings.Join(want[k], ",") != strings.Join(got[k], ",") {
			t.Errorf("%s flips: export %v, report %v", k, got[k], want[k])
		}
	}
	if model == "sim" && len(want["none deference"]) == 0 {
		t.Error("the default simulated judge made no deference flip")
	}
}

// framing run --baseline-c1 RUN asks only C2 and scores it against RUN's
// C1; every report format names the baseline, the flips export pairs its
// C1 with this run's C2, and a baseline that cannot give this run's C1 is
// refused with what differs.
func TestFramingBaselineC1Run(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run := func(args ...string) (int, string, string) {
		return budge(t, append([]string{"framing", "run", "--dir", dir, "--quiet", "--resamples", "100"}, args...)...)
	}
	code, out, errs := run("--model", "sim:neutral")
	if code != ExitOK {
		t.Fatalf("baseline: exit %d: %s", code, errs)
	}
	base := runLine.FindStringSubmatch(out)[1]
	code, out, errs = run("--baseline-c1", base)
	if code != ExitOK {
		t.Fatalf("fixed-C1 run: exit %d: %s", code, errs)
	}
	fixed := runLine.FindStringSubmatch(out)[1]
	for _, want := range []string{"C1 from run " + base + " (model sim:neutral, fingerprint ", "108 C1 sessions on 54 items matched by content", "(C1 mode: fixed-c1)", "sessions: 108 planned"} {
		if !strings.Contains(unwrapped(out), want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
	for _, format := range []string{"md", "html"} {
		_, rep, errs := budge(t, "framing", "report", fixed, "--dir", dir, "--format", format)
		if !strings.Contains(rep, "C1 from run "+base) {
			t.Errorf("%s report lacks the baseline: %s", format, errs)
		}
	}
	_, rep, _ := budge(t, "framing", "report", fixed, "--dir", dir, "--format", "json")
	var j struct {
		Run struct {
			BaselineC1 struct{ Run, Fingerprint string } `json:"baseline_c1"`
		} `json:"run"`
	}
	if err := json.Unmarshal([]byte(rep), &j); err != nil || j.Run.BaselineC1.Run != base || j.Run.BaselineC1.Fingerprint == "" {
		t.Errorf("json report baseline %+v (%v)", j.Run.BaselineC1, err)
	}
	_, flips, _ := budge(t, "export", fixed, "--dir", dir, "--format", "flips")
	if n := strings.Count(flips, `"record":"flip_pair"`); n != 108 || strings.Count(flips, `"c1_run":"`+base+`"`) != 108 {
		t.Errorf("%d flip pairs, want 108 (54 items × 2 pairs), each with its C1 from %s", n, base)
	}

	// Without --data or a sampling flag the run takes the baseline's own
	// items; with --data it must give the same ones.
	code, out, errs = run("--model", "sim:neutral", "--sample", "24", "--stratify", "domain")
	if code != ExitOK && code != ExitUnmeasured {
		t.Fatalf("sampled baseline: exit %d: %s", code, errs)
	}
	sampled := runLine.FindStringSubmatch(out)[1]
	code, out, errs = run("--baseline-c1", sampled)
	if code != ExitOK && code != ExitUnmeasured || !strings.Contains(unwrapped(out), "(24 items,") || !strings.Contains(unwrapped(out), "48 C1 sessions on 24 items") ||
		!strings.Contains(unwrapped(out), "sampled: social 4 of 12 (--sample (pool of data sets without --sample-per) 24, stratified by domain, seed 42)") {
		t.Errorf("run on the baseline's items: exit %d: %s\n%s", code, errs, out)
	}
	if code, _, errs := run("--baseline-c1", sampled, "--data", "sample"); code != ExitInvalid || !strings.Contains(errs, "0 of this run's 54 are not in run "+sampled+"") ||
		!strings.Contains(errs, "used --data sample --sample 24 --stratify \"domain\" --sample-seed 42") {
		t.Errorf("other items: exit %d: %s", code, errs)
	}

	// The pressure run is not a framing run; the fixed run has no C1 of
	// its own.
	code, out, _ = budge(t, "run", "--dir", dir, "--quiet")
	pressure := runLine.FindStringSubmatch(out)[1]
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--baseline-c1", base, "--sample", "20"}, "items (matched by content): 0 of this run's 20 are not in run " + base + ", and 34 of its 54 are not in this run"},
		{[]string{"--baseline-c1", base, "--templates", "budge-plain"}, "template sets: this run budge-plain"},
		{[]string{"--baseline-c1", base, "--labels", "ab"}, "label sets: this run ab (A / B)"},
		{[]string{"--baseline-c1", base, "--mitigation", "be-honest", "--mitigation-mode", "joint"}, "mitigation mode joint runs C1 under each mitigation"},
		{[]string{"--baseline-c1", fixed}, "has no C1 answers of its own (it takes them from run " + base + ")"},
		{[]string{"--baseline-c1", pressure}, "is a pressure run, not a framing run"},
		{[]string{"--baseline-c1", "nosuchrun"}, `no such run "nosuchrun"`},
	} {
		code, _, errs := run(c.args...)
		if code != ExitInvalid || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, want %d and %q in: %s", c.args, code, ExitInvalid, c.want, errs)
		}
	}
}

// framingVerdict is the part of a framing JSON report these tests read.
type framingVerdict struct {
	Measurability struct {
		Verdict    string `json:"verdict"`
		Conditions []struct {
			Condition   string   `json:"condition"`
			Sessions    int      `json:"sessions"`
			Answered    int      `json:"answered"`
			Refused     int      `json:"refused"`
			Unparseable int      `json:"unparseable"`
			Share       *float64 `json:"answered_share"`
		} `json:"by_condition"`
		Unmeasurable []string `json:"unmeasurable_cells"`
	} `json:"measurability"`
}

func framingJSONReport(t *testing.T, dir string) framingVerdict {
	t.Helper()
	code, out, errs := budge(t, "framing", "report", "latest", "--dir", dir, "--format", "json")
	if code != ExitOK {
		t.Fatalf("report exit %d: %s", code, errs)
	}
	var v framingVerdict
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// A judge that refuses every request is not a neutral judge: the run says
// "not measurable" with the counts, first, and exits with the invalid-result
// code.
func TestFramingRefusingJudgeNotMeasurable(t *testing.T) {
	t.Parallel()
	hs := scriptedJudge(t, text("I cannot judge this conversation."))
	defer hs.Close()
	dir := t.TempDir()
	code, out, errs := budge(t, "framing", "run", "--dir", dir, "--model", "openai-compatible:judge", "--base-url", hs.URL+"/v1",
		"--concurrency", "8", "--max-attempts", "1", "--quiet", "--resamples", "100")
	if code != ExitUnmeasured {
		t.Fatalf("exit %d, want %d\n%s", code, ExitUnmeasured, errs)
	}
	if !strings.Contains(errs, "not measurable") {
		t.Errorf("stderr does not say not measurable: %s", errs)
	}
	first := strings.Index(out, "verdict: not measurable")
	if first < 0 || first > strings.Index(out, "data ") || !strings.Contains(out, "Answers by condition") {
		t.Errorf("the text report does not lead with the verdict and the counts:\n%s", out)
	}
	if strings.Contains(out, "no clear shift") {
		t.Errorf("a judge that refused everything reads \"no clear shift\":\n%s", out)
	}
	v := framingJSONReport(t, dir)
	if v.Measurability.Verdict != "not measurable" || len(v.Measurability.Conditions) != 4 {
		t.Fatalf("json measurability %+v", v.Measurability)
	}
	for _, c := range v.Measurability.Conditions {
		if c.Sessions == 0 || c.Refused != c.Sessions || c.Answered != 0 {
			t.Errorf("%s: %+v, want every session refused", c.Condition, c)
		}
	}
	for _, format := range []string{"md", "html"} {
		_, out, _ := budge(t, "framing", "report", "latest", "--dir", dir, "--format", format)
		if !strings.Contains(out, "not measurable") || !strings.Contains(out, "Answers by condition") {
			t.Errorf("%s report does not show the verdict and the counts", format)
		}
	}
}

// A judge that answers half the items unparseably: the report shows the
// share answered per condition and per cell.
func TestFramingHalfUnparseableShowsShare(t *testing.T) {
	t.Parallel()
	var lines []string
	for i := range 20 {
		lines = append(lines, fmt.Sprintf(`{"id": "q%d", "domain": "d", "question": "Question number %d: is it so?", "correct": "yes %d", "incorrect": "no %d"}`, i, i+100, i, i))
	}
	data := filepath.Join(t.TempDir(), "items.jsonl")
	if err := os.WriteFile(data, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Odd-numbered questions get prose without a choice in every condition.
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		content := judgeJSON("1")
		for i := 101; i < 120; i += 2 {
			if strings.Contains(string(body), fmt.Sprintf("Question number %d:", i)) {
				content = "It is hard to say; both readings have merit."
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "cmpl", "object": "chat.completion", "created": 1, "model": "judge",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	}))
	defer hs.Close()
	dir := t.TempDir()
	code, out, errs := budge(t, "framing", "run", "--dir", dir, "--data", data, "--model", "openai-compatible:judge", "--base-url", hs.URL+"/v1",
		"--concurrency", "8", "--max-attempts", "1", "--quiet", "--resamples", "100")
	if code != ExitOK {
		t.Fatalf("exit %d (half the items answered is at the threshold, measurable)\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "50.0%") {
		t.Errorf("the text report does not show the 50%% share:\n%s", out)
	}
	v := framingJSONReport(t, dir)
	if v.Measurability.Verdict != "measurable" {
		t.Errorf("verdict %q", v.Measurability.Verdict)
	}
	for _, c := range v.Measurability.Conditions {
		if c.Share == nil || *c.Share != 0.5 || c.Unparseable != c.Sessions/2 {
			t.Errorf("%s: %+v, want half answered, half unparseable", c.Condition, c)
		}
	}
}

// framingAwkward is one kind of awkward judge reply and how framing must
// read it: the same statuses as pressure for refusals and empty replies,
// and the shared extraction's repairs.
type framingAwkward struct {
	name    string
	reply   reply
	status  string
	repairs []string
	strict  bool
}

func judgeJSON(choice string) string {
	return `{"chosen_answer": "` + choice + `", "reasoning": "The speaker is right."}`
}

var framingAwkwardReplies = []framingAwkward{
	{"clean", text(judgeJSON("1")), "answered", nil, false},
	{"prose around JSON", text("My judgment:\n" + judgeJSON("1") + "\nThanks."), "answered", []string{"surrounding-text"}, false},
	{"prose around JSON, strict", text("My judgment:\n" + judgeJSON("1") + "\nThanks."), "unparseable", []string{"surrounding-text"}, true},
	{"reasoning block with the other choice", text("<think>" + judgeJSON("2") + "</think>" + judgeJSON("1")), "answered", []string{"reasoning-block"}, false},
	{"fenced block inside prose", text("Here:\n```json\n" + judgeJSON("2") + "\n```\nDone."), "answered", []string{"fenced-code", "surrounding-text"}, false},
	{"two objects that disagree", text(judgeJSON("1") + " or " + judgeJSON("2")), "unparseable", nil, false},
	{"duplicate keys after case-folding", text(`{"chosen_answer": "1", "CHOSEN_ANSWER": "2", "reasoning": "x"}`), "unparseable", nil, false},
	{"refusal in English", text("I cannot judge this conversation."), "refusal", nil, false},
	{"refusal in Chinese", text("抱歉，我不能评判这段对话。"), "refusal", nil, false},
	{"provider refusal field", reply{refusal: "I can't help with that.", finish: "stop"}, "refusal", nil, false},
	{"content filter", reply{finish: "content_filter"}, "refusal", nil, false},
	{"empty reply", text(""), "empty", nil, false},
}

func scriptedJudge(t *testing.T, rep reply) *httptest.Server {
	var n atomic.Int64
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		msg := map[string]any{"role": "assistant", "content": rep.content}
		if rep.refusal != "" {
			msg["refusal"] = rep.refusal
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": fmt.Sprintf("cmpl-%d", n.Add(1)), "object": "chat.completion", "created": 1, "model": "judge",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": rep.finish}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	}))
}

// TestFramingAwkwardRepliesEndToEnd runs budge framing run against a
// scripted OpenAI-compatible judge once per kind of awkward reply and
// checks every exported session's status and repairs.
func TestFramingAwkwardRepliesEndToEnd(t *testing.T) {
	for _, kind := range framingAwkwardReplies {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			hs := scriptedJudge(t, kind.reply)
			defer hs.Close()
			dir := t.TempDir()
			args := []string{"framing", "run", "--dir", dir, "--model", "openai-compatible:judge", "--base-url", hs.URL + "/v1",
				"--concurrency", "8", "--max-attempts", "1", "--quiet"}
			if kind.strict {
				args = append(args, "--strict-parse")
			}
			// A judge none of whose answers can be read is not measured.
			want := ExitOK
			if kind.status != "answered" {
				want = ExitUnmeasured
			}
			if code, out, errs := budge(t, args...); code != want {
				t.Fatalf("run exit %d, want %d\n%s\n%s", code, want, out, errs)
			}
			code, out, errs := budge(t, "export", "latest", "--dir", dir)
			if code != ExitOK {
				t.Fatalf("export exit %d: %s", code, errs)
			}
			n, bad := 0, 0
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				var r struct {
					Status  string   `json:"parse_status"`
					Repairs []string `json:"repairs"`
					Problem string   `json:"problem"`
				}
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					t.Fatal(err)
				}
				n++
				if r.Status != kind.status || !slices.Equal(r.Repairs, nonNil(kind.repairs)) {
					if bad++; bad < 4 {
						t.Errorf("status %s repairs %v (%s), want %s %v", r.Status, r.Repairs, r.Problem, kind.status, kind.repairs)
					}
				}
			}
			if n == 0 || bad > 0 {
				t.Errorf("%d of %d sessions off", bad, n)
			}
			code, out, _ = budge(t, "framing", "report", "latest", "--dir", dir, "--format", "json")
			if code != ExitOK {
				t.Fatalf("report exit %d", code)
			}
			var rep struct {
				Measures struct {
					Parse struct {
						Leniency struct {
							Replies  int `json:"replies"`
							Strict   int `json:"read_strictly"`
							Tolerant int `json:"read_tolerantly"`
						} `json:"strict_vs_tolerant"`
					} `json:"parsing"`
				} `json:"measures"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("report: %v", err)
			}
			l := rep.Measures.Parse.Leniency
			readable := kind.status == "answered" || kind.strict
			wantStrict := 0
			if readable && len(kind.repairs) == 0 {
				wantStrict = n
			}
			if l.Replies != n || (l.Tolerant == n) != readable || l.Strict != wantStrict {
				t.Errorf("the report counts %+v, want %d replies, read tolerantly: %v, strictly: %d", l, n, readable, wantStrict)
			}
		})
	}
}

// judgeServer serves the simulated framing judge over HTTP, knowing the
// sample items' answers, as `budge sim serve` does.
func judgeServer(t *testing.T, latency time.Duration, log *providertest.RequestLog) *httptest.Server {
	t.Helper()
	k, err := judgeKnowledge("sample")
	if err != nil {
		t.Fatal(err)
	}
	return simServer(t, sim.ServerOptions{Judge: k, Faults: sim.Faults{Latency: latency}}, log)
}

// simServer serves the simulator with o over HTTP until the test ends,
// keeping its request log in log when given.
func simServer(t *testing.T, o sim.ServerOptions, log *providertest.RequestLog) *httptest.Server {
	t.Helper()
	if log != nil {
		o.OnRequest = log.Add
	}
	_, hs, _ := providertest.SimServer(t, o)
	return hs
}

// inProcessFraming is the uninterrupted in-process framing run with seed 7.
func inProcessFraming(t *testing.T) *study.FramingResult {
	t.Helper()
	o := study.DefaultFramingOptions()
	o.Seed = 7
	ref, err := study.As[*study.FramingResult](study.Start(context.Background(), storetest.Open(t), o))
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// observations are a loaded run's scored sessions.
func observations(t *testing.T, r *study.FramingResult) []framing.Observation {
	t.Helper()
	obs, err := r.Observations(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return obs
}

func sameFraming(t *testing.T, got, want *study.FramingResult) {
	t.Helper()
	g, w := observations(t, got), observations(t, want)
	if len(g) != len(w) {
		t.Fatalf("%d observations, want %d", len(g), len(w))
	}
	for i := range w {
		if !reflect.DeepEqual(g[i], w[i]) {
			t.Fatalf("session %s differs:\n got %+v\nwant %+v", w[i].Session, g[i], w[i])
		}
	}
	if !reflect.DeepEqual(got.Summary, want.Summary) {
		t.Errorf("measures differ from the in-process run")
	}
}

// TestFramingOverHTTPEqualsInProcess: the simulated judge behind the
// OpenAI-compatible server gives exactly the per-session results of the
// in-process judge with the same seed.
func TestFramingOverHTTPEqualsInProcess(t *testing.T) {
	t.Parallel()
	hs := judgeServer(t, 0, nil)
	dir := t.TempDir()
	var out, errb strings.Builder
	code := Main(context.Background(), []string{"framing", "run", "--dir", dir, "--model", "openai-compatible:judge",
		"--base-url", hs.URL + "/v1", "--seed", "7", "--concurrency", "16", "--quiet"}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	st := storetest.OpenDir(t, dir)
	id, _ := st.Resolve(context.Background(), "latest")
	got, err := study.LoadFraming(context.Background(), st, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Manifest.Settings.Temperature == nil || *got.Manifest.Settings.Temperature != 0 {
		t.Errorf("temperature %v, want 0 sent explicitly", got.Manifest.Settings.Temperature)
	}
	if got.Manifest.Net.Adaptive == nil {
		t.Errorf("a run over HTTP records no adaptive concurrency")
	}
	sameFraming(t, got, inProcessFraming(t))

	// export writes one record per session, and show opens one with its
	// parse outcome.
	out.Reset()
	if code := Main(context.Background(), []string{"export", "--dir", dir, "latest"}, nil, &out, &errb); code != 0 {
		t.Fatalf("export: exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if n := len(observations(t, got)); len(lines) != n {
		t.Fatalf("export wrote %d records for %d sessions", len(lines), n)
	}
	var rec framing.Record
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil || rec.Status == "" || rec.Item == "" || rec.TraceRef == nil {
		t.Fatalf("first record %s: %v", lines[0], err)
	}
	out.Reset()
	if code := Main(context.Background(), []string{"show", "--dir", dir, "latest", rec.Session}, nil, &out, &errb); code != 0 {
		t.Fatalf("show: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), `"status": "`+rec.Status+`"`) || !strings.Contains(out.String(), "messages:") {
		t.Errorf("show prints no parse outcome or transcript:\n%s", out.String())
	}
}

// TestFramingKillAndResume: a framing run over HTTP is killed with SIGKILL
// at random points and resumed until it completes; it then equals the
// uninterrupted in-process run, and no session stored before a kill was
// requested again.
func TestFramingKillAndResume(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts child processes")
	}
	log := &providertest.RequestLog{}
	hs := judgeServer(t, 3*time.Millisecond, log)
	dir := t.TempDir()
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 11))
	t.Logf("kill points drawn with seed %d", seed)
	id, snaps := killResumeLoop(t, dir, log, rng, 3, 250,
		[]string{"framing", "run", "--dir", dir, "--model", "openai-compatible:judge", "--base-url", hs.URL + "/v1", "--seed", "7", "--concurrency", "4", "--quiet"},
		func(id string) []string { return []string{"framing", "run", "--dir", dir, "--resume", id, "--quiet"} })
	st := storetest.OpenDir(t, dir)
	res, err := study.LoadFraming(context.Background(), st, id)
	if err != nil {
		t.Fatal(err)
	}
	c := res.Manifest.Counts
	if c.Missing != 0 || c.Failed != 0 || res.Run.Status != store.RunComplete {
		t.Fatalf("after the last resume: status %s, counts %+v", res.Run.Status, c)
	}
	sameFraming(t, res, inProcessFraming(t))
	session := map[int64]string{}
	for _, o := range observations(t, res) {
		session[framing.SessionSeed(7, o.Session)] = o.Session
	}
	assertNotRequestedAgain(t, snaps, log.Entries(), session)
}
