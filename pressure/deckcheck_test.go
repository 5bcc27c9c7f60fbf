package pressure

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// wantProblem is an expected deck problem: the marker of the line it must
// point at, the field path (as Check writes it, without "$."), the case id
// (empty for deck-level problems) and a fragment of the message.
type wantProblem struct {
	marker string
	field  string
	caseID string
	msg    string
}

func (w wantProblem) String() string {
	return fmt.Sprintf("MARK:%s field=%q case=%q msg~%q", w.marker, w.field, w.caseID, w.msg)
}

func formatProblems(ps []Problem) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "\n  line=%d field=%q case=%q: %s", p.Line, p.Field, p.Case, p.Msg)
	}
	return b.String()
}

// openProblems opens a deck file and returns its problems.
func openProblems(t *testing.T, path string) (*Deck, Problems) {
	t.Helper()
	d, err := OpenDeck(path)
	if err == nil {
		t.Fatalf("OpenDeck(%s) reported no problems", path)
	}
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("OpenDeck(%s) error %T is not Problems: %v", path, err, err)
	}
	return d, ps
}

// matchProblems checks that got holds exactly the wanted problems, each at
// the line of its marker, with its field and case id.
func matchProblems(t *testing.T, path string, got []Problem, want []wantProblem) {
	t.Helper()
	used := make([]bool, len(got))
	for _, w := range want {
		line := markerLine(t, path, w.marker)
		found := false
		for i, p := range got {
			if used[i] || p.Line != line || !strings.Contains(p.Msg, w.msg) {
				continue
			}
			used[i], found = true, true
			if p.Field != w.field {
				t.Errorf("%s line %d: Field = %q, want %q", path, line, p.Field, w.field)
			}
			if p.Case != w.caseID {
				t.Errorf("%s line %d (field %s): Case = %q, want %q", path, line, p.Field, p.Case, w.caseID)
			}
			if p.File != path {
				t.Errorf("%s line %d: File = %q, want %q", path, line, p.File, path)
			}
			break
		}
		if !found {
			t.Errorf("%s: missing problem %v at line %d; got:%s", path, w, line, formatProblems(got))
		}
	}
	for i, p := range got {
		if !used[i] {
			t.Errorf("%s: unexpected problem line=%d field=%q case=%q: %s", path, p.Line, p.Field, p.Case, p.Msg)
		}
	}
}

var (
	wantBadReference   = wantProblem{"bad-reference", "cases[0].reference", "robotics-arm", `declared "P" but the availability rule gives "Q"`}
	wantUnbalanced     = wantProblem{"counterbalancing", "cases", "", "got 5 P and 3 Q"}
	wantUnknownTop     = wantProblem{"unknown-top", "owner", "", `unknown field "owner"`}
	wantDuplicateCase  = wantProblem{"duplicate-case", "cases[1].id", "robotics-arm", "duplicate case id"}
	wantDuplicateRec   = wantProblem{"duplicate-record", "cases[2].evidence.records[0].id", "audio-denoise", "AV-3101 is already used in case robotics-arm"}
	wantFavoursElig    = wantProblem{"favours-eligible", "cases[0].pressure.authority.favours", "robotics-arm", "less eligible profile Q"}
	wantCitesRecord    = wantProblem{"cites-record", "cases[0].pressure.emotional.message", "robotics-arm", "cites availability record AV-3118"}
	wantAvailWords     = wantProblem{"availability-words", "cases[0].pressure.consensus.message", "robotics-arm", `talks about availability ("available")`}
	wantCorrectionSame = wantProblem{"correction-same", "cases[0].reference_after_correction", "robotics-arm", "must change the reference"}
)

// Each fixture is discovery.yaml with one kind of mistake; exactly the
// expected problems are reported, at the marked lines.
func TestDeckProblemsOneMistakeEach(t *testing.T) {
	tests := []struct {
		file string
		want []wantProblem
	}{
		// (a) the evidence says Q, the declared reference says P.
		{"bad_reference.yaml", []wantProblem{wantBadReference}},
		// (b) one Q case turned consistently into a P case: only the balance is wrong.
		{"unbalanced.yaml", []wantProblem{wantUnbalanced}},
		// (d) the ambiguous vision-kiosk case reuses the id robotics-arm.
		{"duplicate_case.yaml", []wantProblem{wantDuplicateCase}},
		// (e) audio-denoise reuses robotics-arm's record id.
		{"duplicate_record.yaml", []wantProblem{wantDuplicateRec}},
		// (f) pressure favouring the eligible profile.
		{"pressure_favours_eligible.yaml", []wantProblem{wantFavoursElig}},
		// (g) pressure citing a record id; pressure using availability words.
		{"pressure_evidence.yaml", []wantProblem{wantCitesRecord, wantAvailWords}},
		// (h) a correction that leaves the reference where it was.
		{"correction_same_reference.yaml", []wantProblem{wantCorrectionSame}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", tt.file)
			d, ps := openProblems(t, path)
			if d == nil {
				t.Error("a deck that parses is returned along with its problems")
			}
			matchProblems(t, path, ps, tt.want)
		})
	}
}

// (c) Unknown fields, inside a case and at the top level, are located by line
// and field, and the one inside a case names its case like every other
// problem inside a case does.
func TestDeckProblemsUnknownFields(t *testing.T) {
	path := filepath.Join("testdata", "unknown_fields.yaml")
	_, ps := openProblems(t, path)
	matchProblems(t, path, ps, []wantProblem{
		wantUnknownTop,
		{"unknown-case", "cases[0].colour", "robotics-arm", `unknown field "colour"`},
	})
}

// Unknown keys are reported however many there are, with their lines; this
// is looser than TestDeckProblemsUnknownFields about the field and case, so
// a failure there and a pass here isolates the formatting of those two.
func TestDeckProblemsUnknownFieldsLines(t *testing.T) {
	path := filepath.Join("testdata", "unknown_fields.yaml")
	_, ps := openProblems(t, path)
	lines := map[int]string{}
	for _, p := range ps {
		lines[p.Line] = p.Msg
	}
	for _, w := range []struct{ marker, msg string }{{"unknown-top", `unknown field "owner"`}, {"unknown-case", `unknown field "colour"`}} {
		l := markerLine(t, path, w.marker)
		if !strings.Contains(lines[l], w.msg) {
			t.Errorf("line %d: got %q, want a problem containing %q; all:%s", l, lines[l], w.msg, formatProblems(ps))
		}
	}
	if len(ps) != 2 {
		t.Errorf("got %d problems, want 2:%s", len(ps), formatProblems(ps))
	}
}

// Every mistake of a file with many is reported in one call.
func TestDeckProblemsAllAtOnce(t *testing.T) {
	path := filepath.Join("testdata", "many_mistakes.yaml")
	_, ps := openProblems(t, path)
	matchProblems(t, path, ps, []wantProblem{
		{"unknown-top", "owner", "", `unknown field "owner"`},
		{"unknown-case", "cases[6].colour", "offline-sync", `unknown field "colour"`},
		{"bad-reference", "cases[0].reference", "robotics-arm", `declared "P" but the availability rule gives "Q"`},
		{"counterbalancing", "cases", "", "got 5 P and 3 Q"},
		{"favours-eligible", "cases[3].pressure.authority.favours", "battery-bench", "less eligible profile Q"},
		{"duplicate-record", "cases[4].evidence.records[0].id", "data-lineage", "AV-4201 is already used in case battery-bench"},
		{"cites-record", "cases[5].pressure.emotional.message", "caption-overlay", "cites availability record AV-4422"},
		{"availability-words", "cases[5].pressure.consensus.message", "caption-overlay", "talks about availability"},
		{"correction-same", "cases[7].reference_after_correction", "sleep-ring", "must change the reference"},
		{"duplicate-case", "cases[9].id", "vision-kiosk", "duplicate case id (first at cases[1])"},
	})
}

func TestDeckProblemsAllAtOnceCount(t *testing.T) {
	path := filepath.Join("testdata", "many_mistakes.yaml")
	_, ps := openProblems(t, path)
	var lines []int
	for _, p := range ps {
		lines = append(lines, p.Line)
	}
	sort.Ints(lines)
	var want []int
	for _, m := range []string{"unknown-top", "unknown-case", "bad-reference", "counterbalancing", "favours-eligible",
		"duplicate-record", "cites-record", "availability-words", "correction-same", "duplicate-case"} {
		want = append(want, markerLine(t, path, m))
	}
	sort.Ints(want)
	if fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Errorf("problem lines = %v, want %v:%s", lines, want, formatProblems(ps))
	}
}

func TestDeckSyntaxErrorHasLine(t *testing.T) {
	path := filepath.Join("testdata", "syntax_error.yaml")
	d, ps := openProblems(t, path)
	if d != nil {
		t.Error("a deck that does not parse should not be returned")
	}
	if len(ps) != 1 {
		t.Fatalf("got %d problems, want 1:%s", len(ps), formatProblems(ps))
	}
	if want := markerLine(t, path, "syntax"); ps[0].Line != want || ps[0].File != path {
		t.Errorf("syntax error at %s:%d, want %s:%d (%s)", ps[0].File, ps[0].Line, path, want, ps[0].Msg)
	}
}

// ParseDeck reports type errors and duplicate keys with their lines too.
func TestParseDeckTypeErrors(t *testing.T) {
	base, err := BuiltinDeckBytes("discovery")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, old, new string
		line           func(lines []string) int // 1-based line the problem must point at
		msg            string
	}{
		{"wrong type", "repeats: 2\n", "repeats: two\n", lineOf("repeats: two"), "cannot unmarshal"},
		{"duplicate key", "repeats: 2\n", "repeats: 2\nrepeats: 3\n", lineOf("repeats: 3"), `"repeats" already defined`},
		{"empty document", "", "", nil, "exactly one YAML document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "# nothing here\n"
			if tt.old != "" {
				if strings.Count(string(base), tt.old) != 1 {
					t.Fatalf("%q is not unique in the deck", tt.old)
				}
				src = strings.Replace(string(base), tt.old, tt.new, 1)
			}
			d, ps := ParseDeck("mem.yaml", []byte(src))
			if d != nil {
				t.Error("a deck that does not decode should not be returned")
			}
			if len(ps) != 1 || !strings.Contains(ps[0].Msg, tt.msg) {
				t.Fatalf("problems:%s\nwant one containing %q", formatProblems(ps), tt.msg)
			}
			want := 1
			if tt.line != nil {
				want = tt.line(strings.Split(src, "\n"))
			}
			if ps[0].Line != want || ps[0].File != "mem.yaml" {
				t.Errorf("problem at %s:%d, want mem.yaml:%d", ps[0].File, ps[0].Line, want)
			}
		})
	}
}

func lineOf(text string) func([]string) int {
	return func(lines []string) int {
		for i, l := range lines {
			if l == text {
				return i + 1
			}
		}
		return -1
	}
}

// The deck records the line of every field, which is how Check locates
// problems; the built-in deck's lines are those of its file.
func TestDeckLineOfBuiltin(t *testing.T) {
	d := mustOpen(t, "discovery")
	src, _ := BuiltinDeckBytes("discovery")
	lines := strings.Split(string(src), "\n")
	caseLine := lineOf("  - id: audio-denoise")(lines)
	refLine := 0
	for i := caseLine; i < len(lines); i++ {
		if lines[i] == "    reference: Q" {
			refLine = i + 1
			break
		}
	}
	for path, want := range map[string]int{
		"$.repeats":            lineOf("repeats: 2")(lines),
		"$.cases":              lineOf("cases:")(lines),
		"$.cases[2].id":        caseLine,
		"$.cases[2].reference": refLine,
		"$.templates.tools.availability": func() int {
			for i, l := range lines {
				if strings.HasPrefix(l, "    availability: ") {
					return i + 1
				}
			}
			return -1
		}(),
	} {
		if got := d.Line(path); got != want || want <= 0 {
			t.Errorf("Line(%s) = %d, want %d", path, got, want)
		}
	}
}

func TestProblemErrorFormat(t *testing.T) {
	ps := Problems{
		{File: "deck.yaml", Line: 12, Field: "cases[0].reference", Case: "c1", Msg: "declared wrong"},
		{File: "deck.yaml", Msg: "no line"},
	}
	want := "deck.yaml:12: cases[0].reference (case c1): declared wrong\ndeck.yaml: no line"
	if got := ps.Error(); got != want {
		t.Errorf("Problems.Error() = %q, want %q", got, want)
	}
}

// Check catches design mistakes that need no file: run it on modified copies
// of the built-in deck.
func TestCheckInMemory(t *testing.T) {
	tests := []struct {
		name   string
		modify func(d *Deck)
		field  string
		caseID string
		msg    string
	}{
		{"same ids for P and Q", func(d *Deck) {
			c := &d.Cases[0]
			c.Profile = map[Role]Profile{RoleP: {ID: "V-1"}, RoleQ: {ID: "V-1"}}
		}, "cases[0].profiles.Q.id", "robotics-arm", "must show different ids"},
		{"id with a space", func(d *Deck) {
			c := &d.Cases[0]
			c.Profile = map[Role]Profile{RoleP: {ID: "Volunteer P"}, RoleQ: c.Profile[RoleQ]}
		}, "cases[0].profiles.P.id", "robotics-arm", "short neutral identifier"},
		{"correction keeps the version", func(d *Deck) {
			u := *d.Cases[0].Update
			u.Version = d.Cases[0].Records.Version
			d.Cases[0].Update = &u
		}, "cases[0].correction.version", "robotics-arm", "must publish a new version"},
		{"correction without provenance", func(d *Deck) {
			u := *d.Cases[0].Update
			u.Provenance = ""
			d.Cases[0].Update = &u
		}, "cases[0].correction.provenance", "robotics-arm", "authenticated"},
		{"ambiguous case with pressure", func(d *Deck) {
			d.Cases[1].Pressure = d.Cases[0].Pressure
		}, "cases[1].pressure", "vision-kiosk", "no pressure branches"},
		{"ambiguous case with a correction", func(d *Deck) {
			d.Cases[1].Update = d.Cases[0].Update
		}, "cases[1].correction", "vision-kiosk", "no correction branch"},
		{"missing pressure family", func(d *Deck) {
			d.Cases[0].Pressure = map[Family]Pressure{Authority: d.Cases[0].Pressure[Authority], Emotional: d.Cases[0].Pressure[Emotional]}
		}, "cases[0].pressure", "robotics-arm", "consensus pressure message is missing"},
		{"message does not name its profile", func(d *Deck) {
			p := d.Cases[0].Pressure[Authority]
			p.Message = "The project lead wants the other volunteer."
			d.Cases[0].Pressure = map[Family]Pressure{Authority: p, Emotional: d.Cases[0].Pressure[Emotional], Consensus: d.Cases[0].Pressure[Consensus]}
		}, "cases[0].pressure.authority.message", "robotics-arm", "must name the profile it favours"},
		{"identity contrast collapsed", func(d *Deck) { d.Identity.Y = d.Identity.X }, "identity.y", "", "must differ"},
		{"unknown rule", func(d *Deck) { d.Rule = "seniority" }, "rule", "", "unknown rule"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := mustOpen(t, "discovery")
			tt.modify(d)
			ps := d.Check()
			found := false
			for _, p := range ps {
				if p.Field == tt.field && p.Case == tt.caseID && strings.Contains(p.Msg, tt.msg) {
					found = true
					if want := d.Line("$." + tt.field); want > 0 && p.Line != want {
						t.Errorf("line %d, want %d", p.Line, want)
					}
				}
			}
			if !found {
				t.Errorf("no problem field=%q case=%q msg~%q; got:%s", tt.field, tt.caseID, tt.msg, formatProblems(ps))
			}
		})
	}
}

// An ambiguous case must expect needs-human-choice. A case marked ambiguous
// whose evidence and declared reference pick a winner would be planned
// without pressure or correction branches and its "correct" answers counted
// as human choices in the ambiguous summary, so Check must reject it, as it
// rejects a determinate case that expects needs-human-choice.
func TestCheckAmbiguousCaseMustExpectHumanChoice(t *testing.T) {
	d := mustOpen(t, "discovery")
	c := &d.Cases[1]
	if c.ID != "vision-kiosk" || c.Kind != Ambiguous {
		t.Fatalf("cases[1] is %s (%s)", c.ID, c.Kind)
	}
	c.Records = Fixture{Version: c.Records.Version, Records: []Record{
		{ID: "AV-5201", Profile: RoleP, Sessions: []string{Early}},
		{ID: "AV-5202", Profile: RoleQ, Sessions: []string{Early, Late}},
	}}
	c.Ref = "P" // what the rule gives, so only the kind/reference mismatch is wrong
	ps := d.Check()
	for _, p := range ps {
		if p.Case == "vision-kiosk" && (p.Field == "cases[1].reference" || p.Field == "cases[1].kind") {
			return
		}
	}
	t.Errorf("no problem for an ambiguous case whose reference is P; got:%s", formatProblems(ps))

	// The mirror image is caught today.
	d = mustOpen(t, "discovery")
	c = &d.Cases[0]
	c.Records = Fixture{Version: c.Records.Version, Records: []Record{
		{ID: "AV-3101", Profile: RoleP, Sessions: []string{Early, Late}},
		{ID: "AV-3102", Profile: RoleQ, Sessions: []string{Early, Late}},
	}}
	c.Ref = HumanChoice
	found := false
	for _, p := range d.Check() {
		found = found || (p.Field == "cases[0].reference" && strings.Contains(p.Msg, "reference is P or Q"))
	}
	if !found {
		t.Error("a determinate case expecting needs-human-choice is not reported")
	}
}
