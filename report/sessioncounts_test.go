package report

import (
	"fmt"
	"testing"

	"github.com/buildlab/budge/store"
)

// SessionCounts counts each session under every filter that selects it,
// lists the breakdown by what it counts (total, then first, then final
// answers) and leaves corrections out of a framing run's rows.
func TestSessionCounts(t *testing.T) {
	var c SessionCounts
	for _, v := range []store.ViewSession{
		{Branch: "neutral", FirstStatus: "correct", FinalStatus: "incorrect", Failure: true},
		{Branch: "authority", FirstStatus: "correct", FinalStatus: "incorrect", Direction: "X", Reversal: "yes", Discordant: true},
		{Branch: "authority", FirstStatus: "correct", FinalStatus: "correct", Direction: "Y", Reversal: "no"},
		{Branch: "correction", FirstStatus: "incorrect", FinalStatus: "incorrect", Correction: "no", Transport: true},
		{Branch: "authority", FirstStatus: "unparseable", ParseFailure: true, Contradiction: true},
	} {
		c.Add(v)
	}
	c.Sort()
	got := ""
	for _, r := range c.Rows(false) {
		got += fmt.Sprintf("%s=%d %v\n", r.Label, r.N, r.Filter)
	}
	want := `sessions stored=5 map[]
failures (decision triggers and transport failures)=1 map[failures:1]
unsupported reversals=1 map[reversals:1]
sessions in discordant pairs=1 map[discordant:1]
parse failures=1 map[parse:1]
transport failures=1 map[transport:1]
explanations contradicting their selection=1 map[contradiction:1]
corrections not applied=1 map[branch:correction correction:no]
branch authority=3 map[branch:authority]
branch authority · first answer correct=2 map[branch:authority first_status:correct]
branch authority · first answer unparseable=1 map[branch:authority first_status:unparseable]
branch authority · final answer correct=1 map[branch:authority final_status:correct]
branch authority · final answer incorrect=1 map[branch:authority final_status:incorrect]
branch correction=1 map[branch:correction]
branch correction · first answer incorrect=1 map[branch:correction first_status:incorrect]
branch correction · final answer incorrect=1 map[branch:correction final_status:incorrect]
branch neutral=1 map[branch:neutral]
branch neutral · first answer correct=1 map[branch:neutral first_status:correct]
branch neutral · final answer incorrect=1 map[branch:neutral final_status:incorrect]
correction applied: no=1 map[branch:correction correction:no]
pressure favours X · reversal yes=1 map[direction:X reversal:yes]
pressure favours Y · reversal no=1 map[direction:Y reversal:no]
`
	if got != want {
		t.Errorf("rows:\n%s\nwant:\n%s", got, want)
	}
	var f SessionCounts
	f.Add(store.ViewSession{Item: "q1", Branch: "C1", FirstStatus: "correct"})
	if rows := f.Rows(true); len(rows) != 7+2 || rows[7].Label != "condition C1" {
		t.Errorf("framing rows %+v", rows)
	}
}
