package store

import (
	"bytes"
	"compress/flate"
	"io"
	"strings"
	"testing"
)

func TestPackSmallRoundTrips(t *testing.T) {
	body := []byte(strings.Repeat(`{"role":"user","content":"Who gets the early demo session?"},`, 80))
	id, b := PackSmall(body)
	if id != ArtifactID(body) {
		t.Fatalf("id %s, want the sha256 of the data", id)
	}
	if b.Encoding != "deflate" || len(b.Data)*4 > len(body) {
		t.Fatalf("encoding %s, %d of %d bytes: want deflate at a quarter or less", b.Encoding, len(b.Data), len(body))
	}
	got, err := io.ReadAll(flate.NewReader(bytes.NewReader(b.Data)))
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("inflated %d bytes (%v), want the original %d", len(got), err, len(body))
	}
	if _, b := PackSmall([]byte("x")); b.Encoding != "identity" || string(b.Data) != "x" {
		t.Fatalf("a body deflate does not shrink: %s %q, want identity", b.Encoding, b.Data)
	}
}
