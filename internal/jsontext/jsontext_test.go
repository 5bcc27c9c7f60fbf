package jsontext

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

func TestAppendStringAsMarshal(t *testing.T) {
	var all []byte
	for c := range 256 {
		all = append(all, byte(c))
	}
	check := func(s string) {
		t.Helper()
		want, _ := json.Marshal(s)
		if got := AppendString([]byte("x"), s); !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Fatalf("AppendString(%q) = %s, json.Marshal %s", s, got[1:], want)
		}
	}
	for _, s := range []string{"", "plain", "<a href='x'>&amp;</a>", "tab\there\nnew \"q\" \\ / \b \f \r \x00 \x1f \x7f",
		"é 中文 ✓ \u2028 \u2029 😀", "\xff\xfe bad \xc3", string(all)} {
		check(s)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 5000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = all[rng.IntN(len(all))]
		}
		check(string(b))
	}
}
