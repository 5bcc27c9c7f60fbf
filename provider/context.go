package provider

import "context"

type repeatKey struct{}

// WithRepeat tells providers which repeat of a session a call belongs to.
// A response cache keys on it, so that repeats stay independent samples
// even for a provider that ignores seeds.
func WithRepeat(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, repeatKey{}, n)
}

// Repeat returns the repeat index set by WithRepeat, or 0.
func Repeat(ctx context.Context) int {
	n, _ := ctx.Value(repeatKey{}).(int)
	return n
}
