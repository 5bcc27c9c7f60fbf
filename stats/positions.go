package stats

// Positions lists at(0), …, at(n−1) in order: a sequence read by position,
// such as a protocol's plan (pressure.Planned, framing.Planned), held in
// memory whole.
func Positions[T any](n int, at func(i int) T) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = at(i)
	}
	return out
}
