// Package jsontest reads JSON as tests need to see it: an object's keys in
// the order they were written.
package jsontest

import (
	"bytes"
	"encoding/json"
	"testing"
)

// Keys returns the keys of the JSON object b in their order; the test
// fails when b is not an object.
func Keys(t testing.TB, b []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object (%v): %.200s", err, b)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}
