package report_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/study"
	"github.com/buildlab/budge/testkit/storetest"
	"golang.org/x/text/width"
)

// displayCols is how many terminal columns a line takes (East Asian wide
// and full-width characters take two).
func displayCols(s string) int {
	n := 0
	for _, r := range s {
		switch width.LookupRune(r).Kind() {
		case width.EastAsianWide, width.EastAsianFullwidth:
			n += 2
		default:
			n++
		}
	}
	return n
}

// Every text output of the built-in decks fits in 100 terminal columns:
// the report of each deck (English and Chinese, discovery and
// confirmation) on the default simulator, on sim:credulous (which trips
// the fairness, interval and claim notes), on sim:oracle (the answer key
// note), on both evidence channels and with several pressure turns; a
// comparison of two runs; and the framing run of the sample data.
func TestTextFitsInTheTerminal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.Open(t)
	var outs []string
	var ids []string
	for _, name := range pressure.BuiltinDecks() {
		for _, edit := range []func(*study.PressureOptions){nil,
			func(o *study.PressureOptions) { o.Model = "sim" },
			func(o *study.PressureOptions) { o.Model = "sim:oracle" },
			func(o *study.PressureOptions) { o.Channel = "message" },
			func(o *study.PressureOptions) { o.Turns = 3 }} {
			if _, _, _, err := study.FreezeDeck(ctx, st, name); err != nil {
				t.Fatal(err)
			}
			o := study.DefaultPressureOptions()
			o.Deck, o.Model, o.Concurrency = name, "sim:credulous", 4
			if edit != nil {
				edit(&o)
			}
			res, err := study.As[*study.PressureResult](study.Start(ctx, st, o))
			if err != nil {
				t.Fatal(err)
			}
			if name == "discovery" {
				ids = append(ids, res.Manifest.RunID)
			}
			var b bytes.Buffer
			if err := res.Report().Render(&b, "text"); err != nil {
				t.Fatal(err)
			}
			outs = append(outs, b.String())
		}
	}
	// sim:credulous before, sim after, on the discovery deck.
	cmp, err := study.Compare(ctx, st, ids[:2], 0)
	if err != nil {
		t.Fatal(err)
	}
	var cb bytes.Buffer
	if err := cmp.Render(&cb, "text"); err != nil {
		t.Fatal(err)
	}
	outs = append(outs, cb.String())
	fr, err := study.As[*study.FramingResult](study.Start(ctx, st, study.DefaultFramingOptions()))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := fr.Report().Render(&b, "text"); err != nil {
		t.Fatal(err)
	}
	outs = append(outs, b.String())
	if len(outs) != 5*len(pressure.BuiltinDecks())+2 {
		t.Fatalf("%d outputs rendered", len(outs))
	}
	for i, out := range outs {
		checkFits(t, fmt.Sprintf("output %d", i), out)
	}
}

// checkFits reports each line of out wider than report.TextWidth terminal
// columns.
func checkFits(t *testing.T, name, out string) {
	t.Helper()
	for n, l := range strings.Split(out, "\n") {
		if c := displayCols(l); c > report.TextWidth {
			t.Errorf("%s: line %d is %d columns wide:\n%s", name, n+1, c, l)
		}
	}
}
