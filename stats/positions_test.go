package stats

import (
	"fmt"
	"testing"
)

func TestPositions(t *testing.T) {
	got := Positions(4, func(i int) string { return fmt.Sprint(i * i) })
	if fmt.Sprint(got) != "[0 1 4 9]" {
		t.Errorf("Positions(4, square) = %v, want [0 1 4 9]", got)
	}
	if got := Positions(0, func(i int) int { panic("called") }); got == nil || len(got) != 0 {
		t.Errorf("Positions(0, …) = %#v, want an empty, non-nil list", got)
	}
}
