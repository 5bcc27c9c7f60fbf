package report

import "github.com/buildlab/budge/framing"

// Formatting the facts test shares with the renderers: how a shift and a
// p-value are printed is defined once.
var (
	FShift = func(s framing.Shift) string { return fshift(s) }
	FP     = fp
)
