package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
)

// Cache records the answers of a provider in a directory and answers a
// request it has recorded from there. The key is the sha256 of the
// provider's description (name, model, endpoint and format, never a key),
// the full request (model, messages, tools, settings with the seed, answer
// schema) and the repeat index, so repeats stay independent samples even
// for a model that ignores seeds. Failures are never cached.
type Cache struct {
	dir          string
	inner        provider.Provider
	hits, misses atomic.Int64
}

// NewCache wraps inner with a cache in dir (created owner-only).
func NewCache(dir string, inner provider.Provider) (*Cache, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	return &Cache{dir: dir, inner: inner}, nil
}

// Info is the wrapped provider's: a cached answer is that provider's answer.
func (c *Cache) Info() provider.Info { return c.inner.Info() }

// Counts returns cache hits and misses.
func (c *Cache) Counts() (hits, misses int64) { return c.hits.Load(), c.misses.Load() }

type entry struct {
	Response chat.Response `json:"response"`
	Raw      []byte        `json:"raw,omitempty"`
}

// Key is the cache key of a request.
func (c *Cache) Key(ctx context.Context, req *chat.Request) string {
	sum := requestKey(ctx, c.inner.Info(), req)
	return hex.EncodeToString(sum[:])
}

// requestKey is the sha256 that keys a request's answer in a cache or a
// journal: the provider's description, the request and the repeat index.
func requestKey(ctx context.Context, info provider.Info, req *chat.Request) [32]byte {
	if body, ok := provider.EncodedOf(ctx, req); ok {
		// The caller's encoding of the request, in its place in the
		// encoding of the whole key: the same bytes, encoded once.
		d, _ := json.Marshal(info)
		h := sha256.New()
		h.Write([]byte(`{"provider":`))
		h.Write(d)
		h.Write([]byte(`,"request":`))
		h.Write(body)
		h.Write(strconv.AppendInt([]byte(`,"repeat":`), int64(provider.Repeat(ctx)), 10))
		h.Write([]byte{'}'})
		var sum [32]byte
		h.Sum(sum[:0])
		return sum
	}
	// The sha256 of json.Marshal's encoding, hashed as the encoder writes
	// it instead of from a copy: one allocation of a request's size fewer
	// on every call.
	h := keyHash{sha256.New()}
	_ = json.NewEncoder(h).Encode(struct {
		Provider provider.Info `json:"provider"`
		Request  *chat.Request `json:"request"`
		Repeat   int           `json:"repeat"`
	}{info, req, provider.Repeat(ctx)})
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// keyHash hashes what a json.Encoder writes but the newline that ends
// each value (an Encoder writes a value in one Write), so that the sum is
// that of json.Marshal's bytes.
type keyHash struct{ hash.Hash }

func (k keyHash) Write(b []byte) (int, error) {
	n := len(b)
	if n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	k.Hash.Write(b)
	return n, nil
}

func (c *Cache) path(key string) string { return filepath.Join(c.dir, key[:2], key+".json") }

// Chat answers from the cache or asks the wrapped provider and records it.
func (c *Cache) Chat(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, &provider.Error{Kind: provider.Canceled, Err: err}
	}
	key := c.Key(ctx, req)
	if b, err := os.ReadFile(c.path(key)); err == nil {
		var e entry
		if json.Unmarshal(b, &e) == nil {
			c.hits.Add(1)
			e.Response.Raw = e.Raw
			return &e.Response, nil
		}
	}
	resp, err := c.inner.Chat(ctx, req)
	if err != nil {
		return nil, err
	}
	c.misses.Add(1)
	b, _ := json.Marshal(entry{Response: *resp, Raw: resp.Raw})
	// A failed write only costs a later call; the answer is returned.
	_ = c.write(c.path(key), b)
	return resp, nil
}

// write puts an entry in place atomically (a temporary file renamed), so a
// reader never sees half an entry. It does not sync: a cache entry lost in
// a crash is only asked again.
func (c *Cache) write(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), path)
}
