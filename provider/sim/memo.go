package sim

import "sync"

// memo remembers the results of a function of a string that depends on
// nothing else, for the most recent keys: a conversation's requests carry
// its earlier turns again each time (the registry a tool returned, the
// simulator's own earlier answers), and a served run asks for the same
// few schemas thousands of times, so reading each once saves parsing it
// again on every later request. It holds at most limit keys, starting
// over when full; the values it hands out are shared and must not be
// changed.
type memo[V any] struct {
	mu    sync.Mutex
	m     map[string]V
	limit int
}

func newMemo[V any](limit int) *memo[V] { return &memo[V]{m: map[string]V{}, limit: limit} }

// get returns f(key), from memory when key was asked for recently.
func (c *memo[V]) get(key string, f func(string) V) V {
	c.mu.Lock()
	v, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return v
	}
	v = f(key)
	c.mu.Lock()
	if len(c.m) >= c.limit {
		clear(c.m)
	}
	c.m[key] = v
	c.mu.Unlock()
	return v
}

// getBytes is get for a key held as bytes, which are copied only when
// f's result is remembered.
func (c *memo[V]) getBytes(key []byte, f func(string) V) V {
	c.mu.Lock()
	v, ok := c.m[string(key)]
	c.mu.Unlock()
	if ok {
		return v
	}
	return c.get(string(key), f)
}
