package report

import (
	"fmt"
	"maps"
	"slices"

	"github.com/buildlab/budge/extract"
	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/stats"
)

// table is a titled table the text, Markdown and HTML renderings share.
type table struct {
	Title string
	Head  []string
	Rows  [][]string
	Note  string
}

// leniency puts strict and tolerant parsing side by side: how many replies
// each reads, which repairs tolerant reading needed, and how many neither
// reads. Every count is over the same denominator, the replies received.
func leniency(t extract.Tally, strict bool) table {
	d := t.Replies
	frac := func(n int) string {
		if d == 0 {
			return "0/0"
		}
		return pct(stats.Rate{Num: n, Den: d})
	}
	unparsedStrict := d - t.Strict - t.Refusals - t.Empty
	rows := [][]string{
		{"read as an answer", frac(t.Strict), frac(t.Tolerant)},
		{"unparseable", frac(unparsedStrict), frac(t.Unreadable)},
	}
	for _, k := range slices.Sorted(maps.Keys(t.Repairs)) {
		rows = append(rows, []string{"  read only with repair: " + k, "refused", frac(t.Repairs[k])})
	}
	rows = append(rows,
		[]string{"refusal (decline, refusal field, content filter)", frac(t.Refusals), frac(t.Refusals)},
		[]string{"empty reply", frac(t.Empty), frac(t.Empty)})
	mode := "tolerant"
	if strict {
		mode = "strict (--strict-parse)"
	}
	return table{
		Title: "Parsing: strict and tolerant side by side",
		Head:  []string{"replies", "strict", "tolerant"},
		Rows:  rows,
		Note: fmt.Sprintf("This run used %s parsing: its statuses and measures count that column. "+
			"Strict reads only one valid JSON object with exact ids; tolerant also applies the repairs named in the rows above "+
			"(docs/pressure.md and docs/framing.md describe each), recording every one. A reply needing two repairs counts under both. "+
			"Denominator: the %d replies received (transport failures, tool loops and sessions never run sent none).", mode, d),
	}
}

func (d *doc) tableOf(t table) { d.tableRows(t.Title, t.Head, t.Rows, t.Note) }

// ddsLeniency puts each arm's headline DDS as the run read it (tolerant)
// beside the same answers read strictly, every repaired answer then
// unparseable and scored by the run's policy.
func ddsLeniency(ls []framing.ArmLeniency) table {
	val := func(v *float64) string {
		if v == nil {
			return "not measured"
		}
		return fmt.Sprintf("%+.1f", *v)
	}
	var rows [][]string
	for _, l := range ls {
		rows = append(rows, []string{l.Arm, val(l.Tolerant), val(l.Strict)})
	}
	return table{
		Title: "DDS: tolerant and strict parsing side by side",
		Head:  []string{"arm", "tolerant DDS, pp", "strict DDS, pp"},
		Rows:  rows,
		Note: "The strict column reads the same replies as --strict-parse would: every answer read only with a repair is unparseable and scored by the run's policy. " +
			"A large gap means the verdict rests on the repairs; the parsing table above counts them.",
	}
}

// measuresLeniency puts a tolerant pressure run's headline measures and
// verdict beside the same sessions read strictly.
func measuresLeniency(l *pressure.Leniency, verdict string) table {
	var rows [][]string
	for _, m := range l.Measures {
		rows = append(rows, []string{m.Measure, pct(m.Tolerant), pct(m.Strict)})
	}
	rows = append(rows, []string{"decision", verdict, fmt.Sprintf("%s (%d triggering sessions)", l.StrictVerdict, l.StrictTriggered)})
	return table{
		Title: "Measures: tolerant and strict parsing side by side",
		Head:  []string{"measure", "tolerant (this run)", "strict"},
		Rows:  rows,
		Note: fmt.Sprintf("The strict column reads the same replies as --strict-parse would: a reply read only with a repair is unparseable. "+
			"%d sessions had such a reply; only they can differ. A large gap means the verdict rests on the repairs.", l.Sessions),
	}
}
