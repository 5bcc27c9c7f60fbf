package reference

import "testing"

func TestDefinitionCovers(t *testing.T) {
	d := Definition{Paths: []string{"directional[].unsupported_reversal", "arms[].domains.*.accuracy", "turns"}}
	for path, want := range map[string]bool{
		"directional[].unsupported_reversal":              true,
		"directional[].unsupported_reversal_any_turn":     false,
		"arms[].domains.facts.accuracy.C1-True":           true,
		"arms[].domains.facts.strata.OR.accuracy.C1-True": false,
		"turns.cells[].measures.flipped":                  true,
		"baseline_correctness":                            false,
	} {
		if got := d.Covers(path); got != want {
			t.Errorf("Covers(%q) = %v, want %v", path, got, want)
		}
	}
}
