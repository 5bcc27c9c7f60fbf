package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/buildlab/budge/reference"
)

// referenceSection sets each named measure, computed by its reference
// implementation's definition, beside budge's own (package reference).
func referenceSection(d *doc, ms []reference.Measure, unit, note string) {
	if len(ms) == 0 {
		return
	}
	var rows [][]string
	var defs, methods []string
	for _, m := range ms {
		if m.Interval != nil && !slices.Contains(methods, m.Interval.Method) {
			methods = append(methods, m.Interval.Method)
		}
		val := "—"
		if m.NotDefined != "" {
			val = "not defined on this design"
		} else if m.Value != nil {
			val = refValue(m.Scale, *m.Value)
		}
		iv := "[—]"
		if m.Interval != nil {
			iv = "[" + refValue(m.Scale, m.Interval.Low) + ", " + refValue(m.Scale, m.Interval.High) + "]"
		}
		var parts []string
		for _, p := range m.Parts {
			parts = append(parts, fmt.Sprintf("%s %s/%d", p.Name, num(p.Num), p.Den))
		}
		own := "none"
		if m.Budge != nil {
			own = m.Budge.ID + " —"
			if m.Budge.Value != nil {
				own = m.Budge.ID + " " + refValue(m.Scale, *m.Budge.Value)
			}
		}
		rows = append(rows, []string{m.Name, m.ID, val, iv, strings.Join(parts, "; "), fmt.Sprint(m.Clusters), own})
		line := fmt.Sprintf("%s (%s; %s): %s", m.ID, m.Name, m.Source, m.Definition)
		if m.NotDefined != "" {
			line += " (" + m.NotDefined + ".)"
		}
		if m.Censoring != "" {
			line += " Censoring: " + m.Censoring
		}
		if m.Budge != nil {
			line += " Budge's own (" + m.Budge.ID + ": " + m.Budge.Definition + ") differs: " + m.Differs
		} else {
			line += " Budge has no own measure of this: " + m.Differs
		}
		defs = append(defs, line)
	}
	d.tableRows("Reference measures: the field's named measures by their own definitions, beside budge's",
		[]string{"measure", "definition id", "reference value", "95% interval", "numerators / denominators", unit, "budge's own"}, rows,
		"Each value is computed from this run's sessions exactly as the named reference implementation defines it (its conditioning, denominators, exclusions and averaging)."+note+" Intervals: cluster bootstrap over "+unit+".")
	d.section("How each reference measure is defined, and how budge's own differs", defs)
	if len(methods) > 0 {
		d.section("How the reference intervals were computed", methods)
	}
}

// refValue prints a reference value on its scale.
func refValue(scale string, v float64) string {
	switch scale {
	case "points":
		return fmt.Sprintf("%+.1f pts", v)
	case "difference":
		return fmt.Sprintf("%+.3f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

// num prints a numerator: whole when it is one.
func num(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprint(int64(v))
	}
	return fmt.Sprintf("%.3f", v)
}
