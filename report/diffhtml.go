package report

import (
	"bufio"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"iter"
	"strings"

	"github.com/buildlab/budge/framing"
)

// A run diff puts two runs of the same deck (pressure) or the same items
// (framing) side by side, cell by cell: a cell is one planned session,
// matched across the runs by its session id (pressure: case, identity
// assignment, presentation order, branch and repeat; framing: item,
// template, labels, mitigation and condition). Its head is what
// `budge compare` computes for the pair, rendered from the same document
// as the text and Markdown reports; nothing is recomputed here.

// DiffColumn is one field shown for each side of a cell. Compared fields
// decide whether the cell changed; the others (free text such as the
// reasoning) are shown but would make nearly every cell "changed".
type DiffColumn struct {
	Name     string `json:"name"`
	Compared bool   `json:"compared"`
}

// DiffHead is what a diff shows above its cells.
type DiffHead struct {
	Protocol string `json:"protocol"` // "pressure" or "framing"
	// OwnMeasures says budge compare has no paired test for the runs: the
	// head shows each run's own measures (Arms) side by side instead.
	OwnMeasures bool `json:"own_measures,omitempty"`
	// Section is budge compare's section for the pair: its measures, paired
	// tests and verdict (pressure), or its refusal. Framing runs have no
	// paired test in budge compare: Section then carries only the runs and
	// each run's own measures side by side.
	Section CompareSection `json:"compare"`
	Columns []DiffColumn   `json:"columns"`
	// Note explains anything the reader needs about how cells are matched.
	Note string `json:"note,omitempty"`
	// Arms are the arms of two framing runs, each measured on its own.
	Arms []FramingArmPair `json:"arms,omitempty"`
}

// FramingArmPair is one arm (by name) of two framing runs, each with its
// own measures; nil for a run without the arm.
type FramingArmPair struct {
	Arm    string              `json:"arm"`
	Before *framing.ArmSummary `json:"before"`
	After  *framing.ArmSummary `json:"after"`
}

// FramingNoTest is what a framing diff says in place of a verdict.
const FramingNoTest = "budge compare computes no paired test or verdict for framing runs: each run's own measures are shown side by side " +
	"(not compared, not pooled), then every cell of the two runs"

// HeadHTML renders what a diff shows above its cells: budge compare's
// section for the pair (CompareHTML), or each run's own measures when the
// pair has no paired test (a framing pair).
func (h DiffHead) HeadHTML() (template.HTML, error) {
	if !h.OwnMeasures {
		return h.Section.CompareHTML()
	}
	var b strings.Builder
	if err := diffTmpl.ExecuteTemplate(&b, "doc", h.framingDoc().view()); err != nil {
		return "", err
	}
	return template.HTML(b.String()), nil
}

func (h DiffHead) framingDoc() *doc {
	d := &doc{title: "budge run diff: two framing runs"}
	line := func(label string, r RunInfo) string {
		return fmt.Sprintf("%s: run %s · data %s · model %s · fingerprint %s", label, r.ID, r.Deck, r.Model, r.Fingerprint)
	}
	sec := h.Section
	d.section("Runs", []string{line("before", sec.Before), line("after", sec.After)})
	if sec.Refused != "" {
		d.para("NOT MATCHED: " + sec.Refused)
	} else {
		d.para(FramingNoTest + ".")
	}
	var dds, acc [][]string
	side := func(a *framing.ArmSummary, f func(*framing.ArmSummary) string) string {
		if a == nil {
			return "— (no such arm)"
		}
		return f(a)
	}
	for _, p := range h.Arms {
		dds = append(dds, []string{p.Arm + " · DDS, mean over domains", side(p.Before, macroDDS), side(p.After, macroDDS)})
		arm := p.Before
		if arm == nil {
			arm = p.After
		}
		for _, dom := range arm.Order {
			cell := func(a *framing.ArmSummary, f func(*framing.Cell) string) string {
				if a == nil || a.Domains[dom] == nil {
					return "—"
				}
				return f(a.Domains[dom])
			}
			shift := func(c *framing.Cell) string { return fshift(c.DDS) + " (" + c.Reading + ")" }
			dds = append(dds, []string{p.Arm + " · " + dom + " · DDS", cell(p.Before, shift), cell(p.After, shift)})
			for _, cond := range framing.Conditions {
				rate := func(c *framing.Cell) string { return frate(c.Accuracy[cond]) }
				acc = append(acc, []string{p.Arm + " · " + dom + " · " + string(cond), cell(p.Before, rate), cell(p.After, rate)})
			}
		}
	}
	head := []string{"measure", "before: " + sec.Before.ID, "after: " + sec.After.ID}
	if len(dds) > 0 {
		d.tableRows("DDS of each run on its own, side by side (not compared, not pooled)", head, dds,
			"DDS in points with its paired bootstrap interval within the run, and its reading.")
		d.tableRows("Accuracy of each run on its own, per arm, domain and condition", head, acc, "Accuracy with its Wilson 95% interval.")
	}
	return d
}

func macroDDS(a *framing.ArmSummary) string {
	if a.Macro == nil {
		return "—"
	}
	return fshift(a.Macro.DDS) + " (" + a.Macro.Reading + ")"
}

// DiffSide is one run's reading of a cell; Missing when the run plans no
// such session.
type DiffSide struct {
	Missing bool     `json:"missing"`
	Fields  []string `json:"fields"`
}

// DiffCell is one matched cell of two runs.
type DiffCell struct {
	Position int      `json:"position"` // plan position in the run before
	Key      string   `json:"session_id"`
	Before   DiffSide `json:"before"`
	After    DiffSide `json:"after"`
	// Differs marks, per column, the compared fields whose values differ.
	Differs []bool `json:"differs"`
	Changed bool   `json:"changed"`
}

// NewDiffCell matches two sides of a cell and marks what changed: a side
// missing from one run is a change; otherwise each compared column whose
// value differs.
func NewDiffCell(pos int, key string, cols []DiffColumn, before, after DiffSide) DiffCell {
	c := DiffCell{Position: pos, Key: key, Before: before, After: after, Differs: make([]bool, len(cols))}
	if before.Missing != after.Missing {
		c.Changed = true
	}
	for i, col := range cols {
		if before.Missing || after.Missing || !col.Compared {
			continue
		}
		if field(before.Fields, i) != field(after.Fields, i) {
			c.Differs[i], c.Changed = true, true
		}
	}
	return c
}

func field(f []string, i int) string {
	if i < len(f) {
		return f[i]
	}
	return ""
}

// Field is the value of column i on one side ("—" when missing).
func (s DiffSide) Field(i int) string {
	if s.Missing {
		return "—"
	}
	return field(s.Fields, i)
}

// CompareHTML renders what budge compare says of one pair, built from the
// same document its text and Markdown renderings come from, as an HTML
// fragment (every string escaped by html/template).
func (s CompareSection) CompareHTML() (template.HTML, error) {
	d := Compare{Version: 1, Sections: []CompareSection{s}}.doc()
	var b strings.Builder
	if err := diffTmpl.ExecuteTemplate(&b, "doc", d.view()); err != nil {
		return "", err
	}
	return template.HTML(b.String()), nil
}

// docView exposes a doc's blocks to templates.
type docView struct {
	Title  string
	Blocks []blockView
}

type blockView struct {
	Title, Para, Note string
	Head              []string
	Rows              [][]string
	Lines             []string
	Table             bool
}

func (d *doc) view() docView {
	v := docView{Title: d.title}
	for _, b := range d.blocks {
		if b.figure != "" {
			continue
		}
		rows := make([][]string, len(b.rows))
		for i, r := range b.rows {
			rows[i] = mapStrings(r, plain)
		}
		v.Blocks = append(v.Blocks, blockView{Title: plain(b.title), Para: plain(b.para), Note: plain(b.note), Head: mapStrings(b.head, plain), Rows: rows,
			Lines: mapStrings(b.lines, plain), Table: b.head != nil})
	}
	return v
}

//go:embed assets/diff.html.tmpl
var diffTmplText string

//go:embed assets/diff.css
var diffCSS string

var diffTmpl = template.Must(template.New("diff").Funcs(template.FuncMap{
	"field": func(s DiffSide, i int) string { return s.Field(i) },
	"differs": func(c DiffCell, i int) bool {
		return i < len(c.Differs) && c.Differs[i]
	},
	"verdictClass": verdictClass,
}).Parse(diffTmplText))

// verdictClass is a CSS class for a section's verdict.
func verdictClass(s CompareSection) string {
	switch {
	case s.Comparison == nil:
		return "refused"
	case strings.Contains(s.Comparison.Verdict, "reject"):
		return "rejected"
	}
	return "verdict"
}

// DiffWriter writes a run diff as one self-contained HTML file (inline
// style sheet, no script, no external resource), cell by cell, so a diff
// of large runs is written without holding them: Section starts each pair
// of runs, Cell adds its cells in plan order, Close ends the file. A
// "changed cells only" switch works with CSS alone.
type DiffWriter struct {
	w       *bufio.Writer
	open    bool // a section's table is open
	head    DiffHead
	n, diff int
	err     error
}

// NewDiffWriter starts the file.
func NewDiffWriter(w io.Writer, title string) *DiffWriter {
	d := &DiffWriter{w: bufio.NewWriter(w)}
	d.exec("file-top", map[string]any{"Title": title, "CSS": template.CSS(diffCSS)})
	return d
}

func (d *DiffWriter) exec(name string, data any) {
	if d.err == nil {
		d.err = diffTmpl.ExecuteTemplate(d.w, name, data)
	}
}

// Section starts the diff of one pair of runs: budge compare's verdict,
// then the cells' table.
func (d *DiffWriter) Section(h DiffHead) {
	d.endSection()
	frag, err := h.HeadHTML()
	if err != nil && d.err == nil {
		d.err = err
	}
	d.head, d.n, d.diff, d.open = h, 0, 0, true
	d.exec("section-top", map[string]any{"Head": h, "Compare": frag, "VerdictClass": verdictClass(h.Section)})
}

// Cell adds one cell to the current section.
func (d *DiffWriter) Cell(c DiffCell) {
	d.n++
	if c.Changed {
		d.diff++
	}
	d.exec("cell", map[string]any{"Cell": c, "Columns": d.head.Columns})
}

func (d *DiffWriter) endSection() {
	if d.open {
		d.exec("section-bottom", map[string]any{"Cells": d.n, "Changed": d.diff, "Matched": d.n > 0})
		d.open = false
	}
}

// DiffSection is one pair of runs of a diff file: what it shows above
// its cells, and its cells in plan order (Each stops at fn's first error
// and returns it).
type DiffSection struct {
	Head DiffHead
	Each func(fn func(DiffCell) error) error
}

// WriteDiff writes a run diff of the sections as one self-contained HTML
// file, a section and a cell at a time: no run is held whole.
func WriteDiff(w io.Writer, title string, sections iter.Seq2[DiffSection, error]) error {
	dw := NewDiffWriter(w, title)
	for sec, err := range sections {
		if err != nil {
			return err
		}
		dw.Section(sec.Head)
		if err := sec.Each(func(c DiffCell) error { dw.Cell(c); return nil }); err != nil {
			return err
		}
	}
	return dw.Close()
}

// Close ends the file and reports the first error met.
func (d *DiffWriter) Close() error {
	d.endSection()
	d.exec("file-bottom", nil)
	if d.err != nil {
		return fmt.Errorf("writing the run diff: %w", d.err)
	}
	return d.w.Flush()
}
