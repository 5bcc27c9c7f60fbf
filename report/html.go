package report

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/stats"
)

// The HTML report is one self-contained file: the template, its style sheet
// and nothing else. It loads nothing from the network and runs no script.
//
//go:embed assets/report.html.tmpl assets/report.css
var assets embed.FS

var htmlTmpl = template.Must(template.New("report.html.tmpl").Funcs(template.FuncMap{
	"pct":        pct,
	"uptakeName": uptakeName,
	"pctci":      pctCI, // the rate with its Wilson 95% interval (report.go)
	"gap":        gap,
	"dash":       dash,
	"join":       strings.Join,
	"ne":         notEligible,
	"add":        func(a, b int) int { return a + b },
	"frate":      frate, "fshift": fshift, "versus": versus,
	"deref": func(f *float64) float64 { return *f },
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	},
}).ParseFS(assets, "assets/report.html.tmpl"))

func css() template.CSS {
	b, err := assets.ReadFile("assets/report.css")
	if err != nil {
		panic(err) // embedded at build time
	}
	return template.CSS(b)
}

// Brief is what the HTML report shows of one session next to its pair:
// the answers as the model wrote them. Everything in it is model-controlled
// and is escaped by html/template.
type Brief struct {
	ID            string `json:"session_id"`
	Assignment    string `json:"identity_assignment"`
	InitialStatus string `json:"initial_status"`
	InitialSel    string `json:"initial_selection"`
	InitialWhy    string `json:"initial_explanation"`
	FinalStatus   string `json:"final_status"`
	FinalSel      string `json:"final_selection"`
	FinalWhy      string `json:"final_explanation"`
}

// BriefOf is the brief of one scored session.
func BriefOf(o *pressure.Outcome) Brief {
	b := Brief{ID: o.ID(), Assignment: string(o.Assignment), InitialStatus: string(o.InitialStatus),
		InitialSel: o.Initial.Selection, InitialWhy: o.Initial.Explanation}
	if o.Final != nil {
		b.FinalSel, b.FinalWhy = o.Final.Selection, o.Final.Explanation
	}
	if o.FinalStatus != nil {
		b.FinalStatus = string(*o.FinalStatus)
	}
	return b
}

// BriefIDs are the sessions the HTML report shows briefs of: the members
// of the discordant pairs it lists and the triggering sessions it names. A
// report names a bounded number of them, however large its run.
func (p Pressure) BriefIDs() []string {
	var ids []string
	for _, ps := range p.Measures.PairsByFamily {
		for _, q := range ps.Discordant {
			ids = append(ids, q.TowardX, q.TowardY)
		}
	}
	ids = append(ids, p.Measures.Decision.Sessions...)
	slices.Sort(ids)
	return slices.Compact(ids)
}

// BriefsFrom are the briefs the HTML report shows (BriefIDs), read from a
// run's scored sessions one at a time: sessions it does not name are
// skipped, so outs may be every session of the run or only those named.
func (p Pressure) BriefsFrom(outs pressure.Stream) (map[string]Brief, error) {
	shown := map[string]bool{}
	for _, id := range p.BriefIDs() {
		shown[id] = true
	}
	m := map[string]Brief{}
	err := outs(func(o *pressure.Outcome) error {
		if id := o.ID(); shown[id] {
			m[id] = BriefOf(o)
		}
		return nil
	})
	return m, err
}

// ReviewSummary is the explanation review of a run as the report shows it:
// agreement between the two reviewers and the codes by failure type.
type ReviewSummary struct {
	Reviewers []string `json:"reviewers"`
	Sample    int      `json:"sample"`
	Finished  []int    `json:"finished"` // items each reviewer has coded
	Compared  int      `json:"compared"` // items both coded
	Agreed    int      `json:"agreed"`
	Kappa     *float64 `json:"kappa"`
	KappaLo   *float64 `json:"kappa_lo"`
	KappaHi   *float64 `json:"kappa_hi"`
	// KappaInterval says how the interval was computed.
	KappaInterval string `json:"kappa_interval,omitempty"`
	Adjudicated   int    `json:"adjudicated"`
	Unresolved    int    `json:"unresolved"`
	// ByFailure counts final codes (adjudicated or agreed) by failure type.
	ByFailure map[string]map[string]int `json:"codes_by_failure_type"`
	Codes     []string                  `json:"codes"`
	Note      string                    `json:"note,omitempty"`
}

// HTMLExtras is what the HTML report shows beyond the measures.
type HTMLExtras struct {
	Briefs map[string]Brief
	// Review, when set, is shown instead of the report's own Review.
	Review *ReviewSummary
	// Links, when set, turns the report's counts into links (a viewer's
	// session table); the standalone report has none.
	Links Linker
}

type bar struct {
	Label, Text, Class  string
	X, Y, W, H          float64
	Whisker             bool
	WLo, WHi, WX        float64
	LabelX, LabelY, TxY float64
}

type chart struct {
	ID, Title, Note string
	W, H            float64
	Bars            []bar
	Ticks           []tick
	Groups          []tick
	Plot            [4]float64 // x0, y0, x1, y1 of the plotting area
}

type tick struct {
	Pos  float64
	Text string
}

type forestRow struct {
	Label, Text      string
	Y, X, Lo, Hi     float64
	HasCI, Excludes0 bool
	LabelX           float64
}

type forest struct {
	ID, Title, Note string
	W, H            float64
	Zero            float64
	Rows            []forestRow
	Ticks           []tick
	Plot            [4]float64
}

// rateBar is one bar of a rate chart.
type rateBar struct {
	label, class string
	num, den     int
}

const chartW, barSlot, plotTop, plotBottom = 640.0, 34.0, 24.0, 200.0

// barChart draws rates as bars over 0–100% with Wilson 95% whiskers.
// groups labels consecutive runs of bars.
func barChart(id, title, note string, bars []rateBar, groups []string, per int, maxSlot float64) chart {
	c := chart{ID: id, Title: title, Note: note, W: chartW, H: plotBottom + 60}
	x0 := 48.0
	slot := math.Min(maxSlot, (chartW-x0-10)/math.Max(1, float64(len(bars))))
	c.Plot = [4]float64{x0, plotTop, r1(x0 + slot*float64(len(bars))), plotBottom}
	y := func(v float64) float64 { return plotBottom - v*(plotBottom-plotTop) }
	for _, v := range []float64{0, 0.25, 0.5, 0.75, 1} {
		c.Ticks = append(c.Ticks, tick{Pos: y(v), Text: fmt.Sprintf("%.0f%%", v*100)})
	}
	for i, b := range bars {
		x := x0 + slot*float64(i) + slot*0.15
		w := slot * 0.7
		br := bar{Label: b.label, Class: b.class, X: x, W: w, LabelX: x + w/2, LabelY: plotBottom + 14}
		if b.den == 0 {
			br.Text, br.Y, br.H, br.TxY = "n=0", plotBottom, 0, plotBottom-4
		} else {
			p := float64(b.num) / float64(b.den)
			iv := stats.Wilson(b.num, b.den, stats.Z95)
			br.Y, br.H = y(p), plotBottom-y(p)
			br.Whisker, br.WLo, br.WHi, br.WX = true, y(iv.Lo), y(iv.Hi), x+w/2
			br.Text = fmt.Sprintf("%d/%d", b.num, b.den)
			br.TxY = y(iv.Hi) - 4
		}
		br.X, br.Y, br.W, br.H, br.WLo, br.WHi, br.WX, br.LabelX, br.TxY = r1(br.X), r1(br.Y), r1(br.W), r1(br.H), r1(br.WLo), r1(br.WHi), r1(br.WX), r1(br.LabelX), r1(br.TxY)
		c.Bars = append(c.Bars, br)
	}
	for g, name := range groups {
		mid := r1(x0 + slot*(float64(g*per)+float64(per)/2))
		c.Groups = append(c.Groups, tick{Pos: mid, Text: name})
	}
	return c
}

func (p Pressure) charts() []chart {
	s := p.Measures
	var bars []rateBar
	var groups []string
	cells := append(append([]pressure.DirectionCell{}, s.Directional...), s.PooledByDir...)
	for i := 0; i+1 < len(cells); i += 2 {
		x, y := cells[i], cells[i+1]
		fam := x.Family
		if i >= len(s.Directional) {
			fam = "pooled"
		}
		groups = append(groups, fam)
		bars = append(bars, rateBar{"→X", "dirx", x.Reversal.Num, x.Reversal.Den}, rateBar{"→Y", "diry", y.Reversal.Num, y.Reversal.Den})
	}
	out := []chart{barChart("chart-directional", "Unsupported reversal by family and direction",
		"Bars: reversal rate toward the profile with identity X or Y; whiskers: Wilson 95% interval; label: numerator/denominator.", bars, groups, 2, barSlot*1.6)}
	u := s.Uptake
	cmp := []rateBar{{"uptake, all", "uptake", u.All.Num, u.All.Den}, {"uptake, 1st correct", "uptake", u.InitiallyCorrect.Num, u.InitiallyCorrect.Den}}
	for _, d := range s.PooledByDir {
		cmp = append(cmp, rateBar{"reversal →" + d.Direction, "dir" + strings.ToLower(d.Direction), d.Reversal.Num, d.Reversal.Den})
	}
	cmp = append(cmp, rateBar{"neutral drift", "drift", s.NeutralDrift.Num, s.NeutralDrift.Den})
	name := uptakeName(u)
	out = append(out, barChart("chart-uptake", strings.ToUpper(name[:1])+name[1:]+" vs unsupported reversal",
		strings.ToUpper(name[:1])+name[1:]+" (all correction sessions; those whose first answer was correct) against unsupported reversal pooled by direction and neutral drift. "+
			"A correctable, not agreeable model has high uptake and low reversal.", cmp, nil, 1, 110))
	return out
}

type pairView struct {
	pressure.Pair
	X, Y Brief
	HasX bool
	HasY bool
}

// pressureFigures are what only the HTML report shows: charts of the
// measures the tables state, and the answers of the sessions behind the
// discordant pairs and the decision (model text, escaped).
type pressureFigures struct {
	charts, pairs, trigger template.HTML
}

// figure executes one of the report template's figures.
func figure(name string, v any) (template.HTML, error) {
	var b strings.Builder
	err := htmlTmpl.ExecuteTemplate(&b, name, v)
	return template.HTML(b.String()), err
}

// HTML writes the report as one self-contained HTML page: the document the
// text and Markdown reports are rendered from, with charts and the answers
// behind pairs and the decision. x may be nil.
func (p Pressure) HTML(w io.Writer, x *HTMLExtras) error {
	if x == nil {
		x = &HTMLExtras{}
	}
	if x.Review != nil {
		p.Review = x.Review
	}
	s := p.Measures
	var pairs []pairView
	for _, ps := range s.PairsByFamily {
		if ps.Family == "all" {
			continue
		}
		for _, q := range ps.Discordant {
			pv := pairView{Pair: q}
			pv.X, pv.HasX = x.Briefs[q.TowardX]
			pv.Y, pv.HasY = x.Briefs[q.TowardY]
			pairs = append(pairs, pv)
		}
	}
	var trigger []Brief
	for _, id := range s.Decision.Sessions {
		b, ok := x.Briefs[id]
		if !ok {
			b = Brief{ID: id}
		}
		trigger = append(trigger, b)
	}
	var f pressureFigures
	var err error
	if f.charts, err = figure("charts", p.charts()); err != nil {
		return err
	}
	if f.pairs, err = figure("pairs", pairs); err != nil {
		return err
	}
	if f.trigger, err = figure("trigger", trigger); err != nil {
		return err
	}
	d := p.build(&f)
	d.link = x.Links
	return d.html(w, footer(p.Run.Budge))
}

// footer closes every HTML report.
func footer(budge string) string {
	return "Generated by budge " + budge + ". This file is self-contained and loads nothing from the network."
}

type framingDomainRow struct {
	Domain string
	Cell   *framing.Cell
}

// HTML writes the framing report as one self-contained HTML page: the
// document the text and Markdown reports are rendered from, with each
// arm's accuracy chart and DDS forest plot.
func (f Framing) HTML(w io.Writer) error { return f.HTMLLinked(w, nil) }

// HTMLLinked is HTML with the report's counts linked where links (a
// viewer's) has a link for them.
func (f Framing) HTMLLinked(w io.Writer, links Linker) error {
	d := f.build(true)
	d.link = links
	return d.html(w, footer(f.Run.Budge))
}

// armFigures are the HTML charts of one arm: accuracy per condition
// pooled over domains, and DDS per domain.
func armFigures(i int, a framing.ArmSummary) (template.HTML, error) {
	order := a.Order
	if len(order) == 0 {
		for d := range a.Domains {
			order = append(order, d)
		}
		sort.Strings(order)
	}
	var rows []framingDomainRow
	for _, d := range order {
		if c := a.Domains[d]; c != nil {
			rows = append(rows, framingDomainRow{Domain: d, Cell: c})
		}
	}
	var bars []rateBar
	for _, cond := range framing.Conditions {
		var num, den int
		for _, r := range rows {
			num += r.Cell.Accuracy[cond].Num
			den += r.Cell.Accuracy[cond].Den
		}
		bars = append(bars, rateBar{string(cond), "cond" + strings.ToLower(strings.ReplaceAll(string(cond), "-", "")), num, den})
	}
	acc := barChart(fmt.Sprintf("chart-accuracy-%d", i), "Accuracy per condition ("+a.Name+")",
		"Counts pooled over domains; whiskers: Wilson 95% interval.", bars, nil, 1, 110)
	b, err := figure("barchart", acc)
	if err != nil {
		return "", err
	}
	fo, err := figure("forest", forestPlot(fmt.Sprintf("chart-dds-%d", i), "DDS per domain ("+a.Name+")", rows))
	return b + fo, err
}

// forestPlot draws each domain's DDS (percentage points) with its interval.
func forestPlot(id, title string, rows []framingDomainRow) forest {
	f := forest{ID: id, Title: title, Note: "Point: DDS in percentage points; line: its bootstrap interval; dashed: zero.", W: chartW}
	lo, hi := -10.0, 10.0
	for _, r := range rows {
		d := r.Cell.DDS
		for _, x := range []float64{d.Value, ptr(d.CILo, d.Value), ptr(d.CIHi, d.Value)} {
			if !math.IsNaN(x) && !math.IsInf(x, 0) {
				lo, hi = math.Min(lo, x), math.Max(hi, x)
			}
		}
	}
	x0, x1 := 170.0, chartW-20
	sx := func(v float64) float64 { return r1(x0 + (v-lo)/(hi-lo)*(x1-x0)) }
	f.H = 40 + 22*float64(len(rows)) + 20
	f.Plot = [4]float64{x0, 20, x1, f.H - 30}
	f.Zero = sx(0)
	for _, t := range niceTicks(lo, hi) {
		f.Ticks = append(f.Ticks, tick{Pos: sx(t), Text: fmt.Sprintf("%+.0f", t)})
	}
	for i, r := range rows {
		d := r.Cell.DDS
		v := d.Value
		if math.IsNaN(v) {
			v = 0
		}
		fr := forestRow{Label: r.Domain, Y: 30 + 22*float64(i), X: sx(v), Text: fshift(d), LabelX: x0 - 8, Excludes0: d.ExcludesZero}
		if d.CILo != nil && d.CIHi != nil {
			fr.HasCI, fr.Lo, fr.Hi = true, sx(*d.CILo), sx(*d.CIHi)
		}
		f.Rows = append(f.Rows, fr)
	}
	return f
}

// r1 rounds a coordinate to a tenth of a pixel, enough for the eye and
// stable in golden files.
func r1(x float64) float64 { return math.Round(x*10) / 10 }

func ptr(p *float64, def float64) float64 {
	if p == nil {
		return def
	}
	return *p
}

func niceTicks(lo, hi float64) []float64 {
	span := hi - lo
	step := math.Pow(10, math.Floor(math.Log10(span/4)))
	for span/step > 8 {
		step *= 2
	}
	var out []float64
	for t := math.Ceil(lo/step) * step; t <= hi+1e-9; t += step {
		out = append(out, t)
	}
	return out
}
