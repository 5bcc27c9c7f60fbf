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

func TestAppendHTMLEscapedAsHTMLEscape(t *testing.T) {
	check := func(src []byte) {
		t.Helper()
		var want bytes.Buffer
		want.WriteString("x")
		json.HTMLEscape(&want, src)
		if got := AppendHTMLEscaped([]byte("x"), src); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("AppendHTMLEscaped(%q) = %q, json.HTMLEscape %q", src, got[1:], want.Bytes()[1:])
		}
	}
	for _, s := range []string{"", "plain", `{"a":"<b> & c","d":["\u2028"," x\u2029y "]}`, "<>&", "\u2028\u2029\u2027\u202a",
		"\xe2", "\xe2\x80", "\xe2\x80\xa8", "end \xe2\x80\xa9", "é 中文 ✓ 😀 \xff"} {
		check([]byte(s))
	}
	// Random bytes, rich in what is escaped and in the bytes of U+2028.
	alphabet := []byte("<>&\xe2\x80\xa8\xa9\xaa\"\\ aé")
	rng := rand.New(rand.NewPCG(7, 8))
	for range 5000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		check(b)
	}
}
