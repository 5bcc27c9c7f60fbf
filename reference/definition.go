package reference

import "strings"

// Definition names what a group of a report's measures compute: a stable
// id, the source that states it, and what their numerator and denominator
// count. A JSON report lists its protocol's definitions beside the
// measures; Paths are the JSON paths (below "measures") of the values
// each covers, "[]" standing for any list element and "*" for any key.
type Definition struct {
	ID          string   `json:"definition_id"`
	Source      string   `json:"source"`
	Numerator   string   `json:"numerator_counts"`
	Denominator string   `json:"denominator_counts"`
	Paths       []string `json:"paths"`
}

// Covers reports whether the definition covers the value at path (a JSON
// path below "measures", list elements written "[]").
func (d Definition) Covers(path string) bool {
	for _, p := range d.Paths {
		if matchPath(strings.Split(p, "."), strings.Split(path, ".")) {
			return true
		}
	}
	return false
}

// matchPath matches path segments against a pattern's: "*" matches any
// one segment, and a pattern that ends early covers everything below it.
func matchPath(pat, path []string) bool {
	if len(pat) > len(path) {
		return false
	}
	for i, p := range pat {
		if p != "*" && p != path[i] {
			return false
		}
	}
	return true
}
