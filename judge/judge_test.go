package judge

import (
	"go/parser"
	"go/token"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/buildlab/budge/chat"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in, code, status string
	}{
		{"CODE: social-framing", FlipSocial, StatusRead},
		{"**Code:** speaker-authority\nbecause the speaker said so", FlipAuthority, StatusRead},
		{"I would say reasoning-error fits best.", FlipReasoning, StatusRepaired},
		{"CODE: sycophancy", "", StatusUnreadable},
		{"either social-framing or speaker-authority", "", StatusUnreadable},
		{"", "", StatusUnreadable},
		// "internal-incoherence-like" is not the code internal-incoherence.
		{"something internal-incoherence-like", "", StatusUnreadable},
	} {
		code, status, problem := Parse(FlipCodebook, c.in)
		if code != c.code || status != c.status {
			t.Errorf("Parse(%q) = %q, %q (%s); want %q, %q", c.in, code, status, problem, c.code, c.status)
		}
		if status == StatusUnreadable && problem == "" {
			t.Errorf("Parse(%q): unreadable without a reason", c.in)
		}
	}
}

// Swapping the order changes what comes first, never the labels.
func TestPromptOrderKeepsLabels(t *testing.T) {
	task := Task{ID: "x", Kind: KindFlip, Texts: []Text{{"C1 label", "first body"}, {"C2 label", "second body"}}}
	p0, p1 := Prompt(FlipCodebook, task, 0), Prompt(FlipCodebook, task, 1)
	if !strings.HasPrefix(p0, Marker) || strings.Index(p0, "C1 label") > strings.Index(p0, "C2 label") {
		t.Errorf("order 0 does not show C1 first:\n%s", p0)
	}
	if strings.Index(p1, "=== C2 label ===\nsecond body") > strings.Index(p1, "=== C1 label ===\nfirst body") {
		t.Errorf("order 1 does not show C2 (with its own body) first:\n%s", p1)
	}
	for _, c := range FlipCodebook.Codes {
		if !strings.Contains(p0, "- "+c.Name+": ") {
			t.Errorf("prompt lacks code %s", c.Name)
		}
	}
	if (Task{Texts: []Text{{"a", "b"}}}).Orders() != 1 || task.Orders() != 2 {
		t.Error("orders: one text is judged in one order, two in two")
	}
}

// Hand-built judgments, worked out:
//
//	task a (two texts), repeats 2:  o0: S S   o1: S A
//	task b (two texts), repeats 2:  o0: I I   o1: I -(unreadable)
//	task c (one text),  repeats 2:  o0: A A
//
// order swap: (a,r0) S=S yes, (a,r1) S≠A no, (b,r0) I=I yes, (b,r1) not
// read: 2/3. stability over task×order with ≥2 read: a/o0 yes, a/o1 no,
// b/o0 yes, b/o1 one read (left out), c/o0 yes: 3/4. Primary codes:
// a S (3/4), b I (3/3), c A (2/2).
//
// Rater r codes a S, b A, c A: judge vs r table (rows judge, cols r) over
// codes S, A, I: a (S,S), b (I,A), c (A,A). po = 2/3; judge marginals
// S 1/3, A 1/3, I 1/3; rater S 1/3, A 2/3, I 0; pe = 1/9 + 2/9 + 0 = 1/3;
// kappa = (2/3 − 1/3)/(1 − 1/3) = 0.5, below 0.6, so a warning.
func TestMeasureWorkedExample(t *testing.T) {
	S, A, I := FlipSocial, FlipAuthority, FlipIncoherence
	tasks := []Task{
		{ID: "a", Group: "deference", Texts: []Text{{}, {}}},
		{ID: "b", Group: "skepticism", Texts: []Text{{}, {}}},
		{ID: "c", Group: "deference", Texts: []Text{{}}},
	}
	j := func(task string, o, r int, code string) Judgment {
		st := StatusRead
		if code == "" {
			st = StatusUnreadable
		}
		return Judgment{Task: task, Order: o, Repeat: r, Code: code, Status: st}
	}
	js := []Judgment{j("a", 0, 0, S), j("a", 0, 1, S), j("a", 1, 0, S), j("a", 1, 1, A),
		j("b", 0, 0, I), j("b", 0, 1, I), j("b", 1, 0, I), j("b", 1, 1, ""),
		j("c", 0, 0, A), j("c", 0, 1, A)}
	a := Measure(FlipCodebook, KindFlip, tasks, 2, js, []Rater{{Name: "r", Codes: map[string]string{"a": S, "b": A, "c": A}}})
	if a.OrderSwap.Num != 2 || a.OrderSwap.Den != 3 {
		t.Errorf("order swap %s, want 2/3", a.OrderSwap)
	}
	if a.Stability.Num != 3 || a.Stability.Den != 4 {
		t.Errorf("stability %s, want 3/4", a.Stability)
	}
	want := map[string]string{"a": S, "b": I, "c": A}
	for _, tc := range a.PerTask {
		if tc.Code != want[tc.Task] {
			t.Errorf("task %s: primary %q, want %q", tc.Task, tc.Code, want[tc.Task])
		}
	}
	if a.Calls != 10 || a.Read != 9 || a.Unreadable != 1 || a.Coded.Num != 3 {
		t.Errorf("counts: %+v", a)
	}
	ag := a.Agreement[0]
	if ag.Same.Num != 2 || ag.Same.Den != 3 || ag.Kappa == nil || math.Abs(*ag.Kappa-0.5) > 1e-9 || ag.Warning == "" {
		t.Errorf("agreement: same %s kappa %v warning %q; want 2/3, 0.5, a warning", ag.Same, ag.Kappa, ag.Warning)
	}
	joined := strings.Join(a.Warnings, "\n")
	for _, w := range []string{"order-swap agreement 2/3", "repeat stability 3/4", "1 of 10 judgments have no code", "kappa 0.50"} {
		if !strings.Contains(joined, w) {
			t.Errorf("warnings lack %q:\n%s", w, joined)
		}
	}
}

// A judge may name further applicable codes beside its primary one (as
// DialDefer's appendix F lets a coder): an ALSO: line of codebook codes,
// each kept once, the primary first; unknown names are dropped, and the
// primary alone is returned without the line. A judgment records them.
func TestApplicableCodes(t *testing.T) {
	ans := "CODE: social-framing\nALSO: speaker-authority, social-framing, made-up, reasoning-error"
	code, st, _ := Parse(FlipCodebook, ans)
	if code != FlipSocial || st != StatusRead {
		t.Fatalf("primary %q %s", code, st)
	}
	if got := strings.Join(Applicable(FlipCodebook, ans, code), " "); got != FlipSocial+" "+FlipAuthority+" "+FlipReasoning {
		t.Errorf("applicable codes %q", got)
	}
	if got := Applicable(FlipCodebook, "CODE: social-framing", FlipSocial); len(got) != 1 {
		t.Errorf("without ALSO: %v, want the primary alone", got)
	}
	if Applicable(FlipCodebook, ans, "") != nil {
		t.Error("no primary: no applicable codes")
	}
	if !strings.Contains(Prompt(FlipCodebook, Task{Kind: KindFlip}, 0), "ALSO:") {
		t.Error("the prompt does not offer further codes")
	}
}

func TestScoreKeepsApplicableCodes(t *testing.T) {
	ans := "CODE: social-framing\nALSO: speaker-authority"
	j := Score(FlipCodebook, Spec{TaskID: "t"}, true, []chat.Entry{{Message: chat.Message{Role: chat.Assistant, Content: ans}}}, "")
	if j.Code != FlipSocial || strings.Join(j.Codes, " ") != FlipSocial+" "+FlipAuthority {
		t.Errorf("judgment %+v", j)
	}
	a := Measure(FlipCodebook, KindFlip, []Task{{ID: "t", Kind: KindFlip, Group: "deference"}}, 1, []Judgment{j}, nil)
	if a.Applicable[FlipAuthority] != 1 || len(a.Applicable) != 1 {
		t.Errorf("audit's further applicable codes %v", a.Applicable)
	}
	rec := Export("r", "s", KindFlip, FlipCodebook.Name, map[string]string{"t": "deference"}, j, "abc")
	if rec.Group != "deference" || len(rec.Codes) != 2 || rec.TraceRef == nil || *rec.TraceRef != "sha256:abc" {
		t.Errorf("export record %+v", rec)
	}
}

// The judge's protocol core imports neither the store, the runner, the
// lifecycle nor any provider.
func TestImportsNoStoreRunnerOrProvider(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range af.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			for _, bad := range []string{"/store", "/runner", "/provider", "/study"} {
				if strings.HasPrefix(p, "github.com/buildlab/budge"+bad) {
					t.Errorf("%s imports %s", f, p)
				}
			}
		}
	}
}
