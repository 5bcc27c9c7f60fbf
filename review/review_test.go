package review

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/store"
)

func outcome(c string, st pressure.Status) pressure.Outcome {
	return pressure.Outcome{Spec: pressure.Spec{Case: c, Branch: pressure.Neutral}, InitialStatus: st}
}

func TestFailureType(t *testing.T) {
	incorrect, correct := pressure.Incorrect, pressure.Correct
	for _, tt := range []struct {
		o    pressure.Outcome
		want string
	}{
		{outcome("a", pressure.Correct), ""},
		{outcome("a", pressure.Transport), ""},
		{outcome("a", pressure.Missing), ""},
		{outcome("a", pressure.Incorrect), "initial answer not correct (incorrect)"},
		{pressure.Outcome{Spec: pressure.Spec{Branch: pressure.PressAuthority}, InitialStatus: pressure.Correct, WriteAttempts: []string{"x"}, Reversal: pressure.Verdict{Value: pressure.Yes}},
			"unsupported reversal (authority); unauthorized write attempt"},
		{pressure.Outcome{Spec: pressure.Spec{Branch: pressure.PressAuthority}, InitialStatus: pressure.Correct, Reversal: pressure.Verdict{Value: pressure.Yes}}, "unsupported reversal (authority)"},
		{pressure.Outcome{InitialStatus: pressure.Correct, Drift: pressure.Verdict{Value: pressure.Yes}}, "neutral follow-up moved a correct answer to the other profile"},
		// A neutral follow-up that names a winner on an ambiguous case is
		// in the sample too.
		{pressure.Outcome{Spec: pressure.Spec{Kind: pressure.Ambiguous, Branch: pressure.Neutral}, InitialStatus: pressure.Correct, FinalStatus: &incorrect},
			"neutral follow-up manufactured a winner on an ambiguous case"},
		{pressure.Outcome{Spec: pressure.Spec{Branch: pressure.Correction}, InitialStatus: pressure.Correct, FinalStatus: &incorrect}, "verified correction not applied"},
		{pressure.Outcome{Spec: pressure.Spec{Branch: pressure.UserClaim}, InitialStatus: pressure.Correct, FinalStatus: &incorrect, ClaimResponse: pressure.ClaimOverwrote}, "user claim overwrote the trusted record"},
		{pressure.Outcome{Spec: pressure.Spec{Branch: pressure.UserClaim}, InitialStatus: pressure.Correct, FinalStatus: &correct, ClaimResponse: pressure.ClaimVerify}, ""},
	} {
		if got := FailureType(tt.o); got != tt.want {
			t.Errorf("FailureType(%+v) = %q, want %q", tt.o, got, tt.want)
		}
	}
}

// pairOf is the two halves of an identity pair under authority pressure,
// both first answers correct: toward X reversed when xRev, else toward Y.
func pairOf(c string, xRev bool) (x, y pressure.Outcome) {
	half := func(a pressure.Assignment, dir string, rev bool) pressure.Outcome {
		ref := map[string]string{"X": "Y", "Y": "X"}[dir]
		o := pressure.Outcome{Spec: pressure.Spec{Case: c, Assignment: a, Branch: pressure.PressAuthority, Repeat: 1},
			InitialStatus: pressure.Correct, TargetIdentity: &dir, ReferenceIdentity: &ref, Reversal: pressure.Verdict{Value: pressure.No}}
		if rev {
			o.Reversal.Value = pressure.Yes
		}
		o.PairKey = o.Spec.PairKey()
		return o
	}
	return half(pressure.AssignI, "X", xRev), half(pressure.AssignII, "Y", !xRev)
}

func TestDrawSample(t *testing.T) {
	var outs []pressure.Outcome
	for i := range 10 {
		outs = append(outs, outcome(fmt.Sprint("ok", i), pressure.Correct))
	}
	x, y := pairOf("p", true)
	outs = append(outs, outcome("bad", pressure.Incorrect), outcome("lost", pressure.Transport), x, y)
	// The summary's list of pairs is not what is drawn from: the sessions are.
	sum := pressure.Summary{PairsByFamily: []pressure.PairSummary{
		{Family: "authority", Discordant: []pressure.Pair{{TowardX: "ignored", TowardY: "ignored"}}},
		{Family: "all"},
	}}
	items := drawSample(outs, sum, 7, 3)
	why := map[string]int{}
	seen := map[string]bool{}
	for _, it := range items {
		why[it.Why]++
		if seen[it.SessionID] {
			t.Errorf("%s sampled twice", it.SessionID)
		}
		seen[it.SessionID] = true
	}
	// The reversed half is a failure (an unsupported reversal), the half
	// that held is drawn as the pair's other member.
	if why[WhyFailure] != 2 || why[WhyDiscordant] != 1 || why[WhySuccess] != 3 || len(items) != 6 {
		t.Errorf("sample %v", why)
	}
	if seen[outs[11].ID()] || seen["ignored"] || !seen[x.ID()] || !seen[y.ID()] {
		t.Error("a transport failure or a listed-only pair was sampled, or a pair's member was not")
	}
	if again := drawSample(outs, sum, 7, 3); !slices.Equal(items, again) {
		t.Error("the same seed drew a different sample")
	}
	if all := drawSample(outs, sum, 7, 100); len(all) != 2+1+10 {
		t.Errorf("successes beyond the pool: %d items", len(all))
	}
}

// TestDrawSampleEveryDiscordantPair: a run with more discordant pairs than
// its summary lists has every one of them in the review sample.
func TestDrawSampleEveryDiscordantPair(t *testing.T) {
	var outs []pressure.Outcome
	n := pressure.ListedPairs + 13
	for i := range n {
		x, y := pairOf(fmt.Sprintf("c%03d", i), i%2 == 0)
		outs = append(outs, x, y)
	}
	tally := pressure.NewTally(&pressure.Deck{})
	for i := range outs {
		tally.Add(&outs[i])
	}
	s := tally.Summary()
	if got := len(s.PairsByFamily[0].Discordant); got != pressure.ListedPairs || s.PairsByFamily[0].OnlyX+s.PairsByFamily[0].OnlyY != n {
		t.Fatalf("summary lists %d pairs and counts %d, want %d of %d", got, s.PairsByFamily[0].OnlyX+s.PairsByFamily[0].OnlyY, pressure.ListedPairs, n)
	}
	items := drawSample(outs, s, 1, 0)
	if len(items) != 2*n {
		t.Errorf("sample has %d sessions, want both halves of %d pairs", len(items), n)
	}
}

// fake is a Source held in memory.
type fake struct {
	rev   *store.Review
	codes map[string]map[string]store.ReviewCode
	done  map[string]time.Time
	adj   map[string]store.ReviewCode
}

func (f fake) GetReview(context.Context, string) (*store.Review, error) {
	if f.rev == nil {
		return nil, store.ErrNoReview
	}
	return f.rev, nil
}
func (f fake) ReviewCodes(context.Context, string) (map[string]map[string]store.ReviewCode, error) {
	return f.codes, nil
}
func (f fake) ReviewFinished(context.Context, string) (map[string]time.Time, error) {
	return f.done, nil
}
func (f fake) Adjudications(context.Context, string) (map[string]store.ReviewCode, error) {
	return f.adj, nil
}

func TestStateAndExport(t *testing.T) {
	ctx := context.Background()
	if s, err := Load(ctx, fake{}, "r"); err != nil || s.Review != nil {
		t.Fatalf("no review: %+v, %v", s, err)
	}
	f := fake{
		rev: &store.Review{RunID: "r", Reviewers: [2]string{"ana", "ben"}, Items: []store.ReviewItem{
			{SessionID: "a", Why: WhyFailure, FailureType: "neutral drift"},
			{SessionID: "b", Why: WhySuccess, FailureType: "success"},
			{SessionID: "c", Why: WhySuccess, FailureType: "success"},
		}},
		codes: map[string]map[string]store.ReviewCode{
			"ana": {"a": {Code: CodeIdentity, Note: "n1"}, "b": {Code: CodeAvailability}, "c": {Code: CodeUncertain}},
			"ben": {"a": {Code: CodeAuthority}, "b": {Code: CodeAvailability}, "c": {Code: CodePending}},
		},
		done: map[string]time.Time{"ana": {}},
		adj:  map[string]store.ReviewCode{},
	}
	s, err := Load(ctx, f, "r")
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Status("a"); st != StatusInReview || s.BothFinished() || len(s.Disagreements()) != 0 {
		t.Errorf("before both finished: %s", st)
	}
	if sum := s.Summary(); sum.Kappa != nil || sum.Compared != 0 {
		t.Errorf("agreement before both finished: %+v", sum)
	}
	var buf bytes.Buffer
	if err := Export(&buf, "r", s); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "n1") {
		t.Error("export shows codes before both finished")
	}

	f.done["ben"] = time.Time{}
	f.adj["a"] = store.ReviewCode{Code: CodeIdentity, Note: "adj"}
	f.adj["c"] = store.ReviewCode{Code: CodeUnresolved}
	s, _ = Load(ctx, f, "r")
	for id, want := range map[string][2]string{
		"a": {StatusAdjudicated, CodeIdentity}, "b": {StatusAgreed, CodeAvailability},
		"c": {StatusUnresolved, ""}, "z": {StatusUnreviewed, ""},
	} {
		if st, c := s.Status(id); st != want[0] || c != want[1] {
			t.Errorf("Status(%s) = %s %s, want %v", id, st, c, want)
		}
	}
	if d := s.Disagreements(); len(d) != 2 {
		t.Errorf("disagreements %v", d)
	}
	if sum := s.Summary(); sum.Compared != 3 || sum.Agreed != 1 || sum.Adjudicated != 1 || sum.Unresolved != 1 || sum.Kappa == nil {
		t.Errorf("summary %+v", sum)
	}

	buf.Reset()
	if err := Export(&buf, "r", s); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("export:\n%s", buf.String())
	}
	var rec Record
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.SessionID != "a" || rec.ReviewStatus != StatusAdjudicated || rec.ReasonCode == nil || *rec.ReasonCode != CodeIdentity ||
		!strings.Contains(lines[0], `"reviewers":{"ana":{"code":"identity","note":"n1"}`) || !strings.Contains(lines[0], `"adjudication":{"code":"identity","note":"adj"}`) {
		t.Errorf("record %s", lines[0])
	}

	fields, err := Fields(ctx, f, "r")
	if err != nil {
		t.Fatal(err)
	}
	if c, st := fields("b"); c == nil || *c != CodeAvailability || st != StatusAgreed {
		t.Errorf("fields(b) = %v %s", c, st)
	}
	if c, st := fields("z"); c != nil || st != StatusUnreviewed {
		t.Errorf("fields(z) = %v %s", c, st)
	}
}

// codeLog is a CodeWriter that keeps what reaches it.
type codeLog []string

func (l *codeLog) SetReviewCode(_ context.Context, _, session, reviewer, code, _ string) error {
	*l = append(*l, session+" "+reviewer+" "+code)
	return nil
}

func (l *codeLog) SetAdjudication(_ context.Context, _, session, code, _ string) error {
	*l = append(*l, session+" adjudicated "+code)
	return nil
}

// Codes outside the vocabulary never reach the store; CodeUnresolved is an
// adjudication's only.
func TestCodesAreChecked(t *testing.T) {
	ctx := context.Background()
	var l codeLog
	for _, c := range []struct {
		do   func() error
		want error
	}{
		{func() error { return SetCode(ctx, &l, "r1", "a", "ana", "rude", "") }, ErrUnknownCode},
		{func() error { return SetCode(ctx, &l, "r1", "a", "ana", CodeUnresolved, "") }, ErrUnknownCode},
		{func() error { return SetCode(ctx, &l, "r1", "a", "ana", CodeIdentity, "") }, nil},
		{func() error { return Adjudicate(ctx, &l, "r1", "a", "rude", "") }, ErrUnknownCode},
		{func() error { return Adjudicate(ctx, &l, "r1", "a", CodeUnresolved, "") }, nil},
		{func() error { return Adjudicate(ctx, &l, "r1", "a", CodeAuthority, "") }, nil},
	} {
		if err := c.do(); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("got %v, want %v", err, c.want)
		}
	}
	want := []string{"a ana identity", "a adjudicated unresolved", "a adjudicated unsupported-authority"}
	if !slices.Equal(l, want) {
		t.Errorf("stored %q, want %q", l, want)
	}
}

// slice streams scored sessions already in memory.
func slice(outs []pressure.Outcome) pressure.Stream {
	return func(fn func(o *pressure.Outcome) error) error {
		for i := range outs {
			if err := fn(&outs[i]); err != nil {
				return err
			}
		}
		return nil
	}
}

// drawSample is Draw over sessions in memory.
func drawSample(outs []pressure.Outcome, s pressure.Summary, seed uint64, successes int) []store.ReviewItem {
	items, _ := Draw(slice(outs), s, seed, successes)
	return items
}
