package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/buildlab/budge/store"
)

// Each opens a working, empty store on every backend, and a new one each
// time open is called.
func TestEach(t *testing.T) {
	var ran []string
	Each(t, func(t *testing.T, open func() *store.Store) {
		ran = append(ran, t.Name())
		ctx := context.Background()
		a, b := open(), open()
		r := store.Run{ID: "r1", Protocol: "pressure", Created: time.Now(), Status: store.RunRunning, Manifest: json.RawMessage(`{}`)}
		if err := a.CreateRun(ctx, r, "builtin", []byte("deck")); err != nil {
			t.Fatal(err)
		}
		if id, err := a.Resolve(ctx, "latest"); err != nil || id != "r1" {
			t.Errorf("Resolve = %q, %v", id, err)
		}
		if _, err := b.Resolve(ctx, "latest"); err == nil {
			t.Error("a second store sees the first one's run: not a new store")
		}
	})
	if len(ran) != 2 {
		t.Errorf("ran on %v, want both backends", ran)
	}
}
