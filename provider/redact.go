package provider

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/buildlab/budge/chat"
)

// Redacted replaces a secret wherever one is found.
const Redacted = "[redacted]"

// Redactor takes secrets out of what a provider returns: response bodies,
// decoded answers and error messages. It redacts values, not words: the
// actual keys it was built with, wherever they appear (and any run of 12 or
// more of a long key's characters, as a server that masks part of a key
// echoes the rest), and, as a fallback for keys it was not told about,
// strings shaped like API keys (sk-..., sk-ant-..., AIza..., the token of a
// "Bearer" header). Ordinary words are never touched: "Incorrect API key
// provided" stays as it is.
//
// It is built where keys are known: endpoint.Open passes every key the
// process holds, each provider adds its own. The zero Redactor redacts key
// shapes only.
type Redactor struct {
	secrets [][]byte
}

// Secrets shorter than minSecret, and secrets made of letters only ("EMPTY",
// "ollama", "password": placeholders that local servers accept), are not
// redacted by value: they are words, and blanking them would blank text.
const minSecret = 8

// A run of window characters of a long key is a partial echo; windows are
// tried every windowStep characters, so any run of window+windowStep-1
// characters of a key is found, and extended to all it shares with the key.
const (
	window     = 12
	windowStep = 4
)

// NewRedactor redacts the given secret values; empty, short and all-letter
// ones are ignored, as are duplicates.
func NewRedactor(secrets ...string) Redactor {
	var r Redactor
	return r.With(secrets...)
}

// With returns a Redactor that also redacts secrets.
func (r Redactor) With(secrets ...string) Redactor {
	out := Redactor{secrets: append([][]byte(nil), r.secrets...)}
	for _, s := range secrets {
		s = strings.TrimSpace(s)
		if !isSecret(s) {
			continue
		}
		dup := false
		for _, have := range out.secrets {
			dup = dup || string(have) == s
		}
		if !dup {
			out.secrets = append(out.secrets, []byte(s))
		}
	}
	return out
}

// Len is the number of secret values the Redactor knows.
func (r Redactor) Len() int { return len(r.secrets) }

func isSecret(s string) bool {
	if len(s) < minSecret {
		return false
	}
	for _, c := range s {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return true
		}
	}
	return false
}

// keyShape matches the common forms of API keys: OpenAI and OpenRouter
// (sk-..., sk-proj-..., sk-or-v1-...), Anthropic (sk-ant-...), Google
// (AIza...), Groq, xAI, Perplexity and Hugging Face tokens.
var keyShape = regexp.MustCompile(`\b(?:sk-[A-Za-z0-9_-]{16,}|AIza[A-Za-z0-9_-]{30,}|(?:gsk_|xai-|pplx-|hf_)[A-Za-z0-9]{20,})`)

// bearerToken matches the token of an Authorization header; the word
// "Bearer" is kept.
var bearerToken = regexp.MustCompile(`(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{16,}`)

var shapePrefixes = [][]byte{[]byte("sk-"), []byte("AIza"), []byte("gsk_"), []byte("xai-"), []byte("pplx-"), []byte("hf_"), []byte("earer"), []byte("EARER")}

// Redact returns b with every secret replaced by [redacted]. It returns b
// itself when there is nothing to redact, and never changes b in place.
func (r Redactor) Redact(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	var spans [][2]int
	for _, sec := range r.secrets {
		spans = appendSecretSpans(spans, b, sec)
	}
	if len(spans) > 0 {
		b = replaceSpans(b, spans)
	}
	shaped := false
	for _, p := range shapePrefixes {
		if bytes.Contains(b, p) {
			shaped = true
			break
		}
	}
	if shaped {
		b = keyShape.ReplaceAll(b, []byte(Redacted))
		b = bearerToken.ReplaceAll(b, []byte("${1}"+Redacted))
	}
	return b
}

// appendSecretSpans adds the spans of b that hold sec, or a run of at least
// window of its characters when sec is long.
func appendSecretSpans(spans [][2]int, b, sec []byte) [][2]int {
	if len(sec) < window+windowStep {
		for off := 0; ; {
			i := bytes.Index(b[off:], sec)
			if i < 0 {
				return spans
			}
			spans = append(spans, [2]int{off + i, off + i + len(sec)})
			off += i + len(sec)
		}
	}
	for k := 0; k+window <= len(sec); k += windowStep {
		w := sec[k : k+window]
		for off := 0; ; {
			i := bytes.Index(b[off:], w)
			if i < 0 {
				break
			}
			start, end := off+i, off+i+window
			// Extend the match to all the text shares with the key there.
			for ks := k; ks > 0 && start > 0 && b[start-1] == sec[ks-1]; ks-- {
				start--
			}
			for ke := k + window; ke < len(sec) && end < len(b) && b[end] == sec[ke]; ke++ {
				end++
			}
			spans = append(spans, [2]int{start, end})
			off = end
		}
	}
	return spans
}

// replaceSpans replaces the union of spans in a copy of b.
func replaceSpans(b []byte, spans [][2]int) []byte {
	// Few spans: a simple sort keeps this dependency-free and cheap.
	for i := 1; i < len(spans); i++ {
		for j := i; j > 0 && spans[j][0] < spans[j-1][0]; j-- {
			spans[j], spans[j-1] = spans[j-1], spans[j]
		}
	}
	out := make([]byte, 0, len(b))
	pos := 0
	for i := 0; i < len(spans); {
		start, end := spans[i][0], spans[i][1]
		for i++; i < len(spans) && spans[i][0] <= end; i++ {
			end = max(end, spans[i][1])
		}
		out = append(out, b[pos:start]...)
		out = append(out, Redacted...)
		pos = end
	}
	return append(out, b[pos:]...)
}

// String redacts s.
func (r Redactor) String(s string) string {
	if s == "" {
		return s
	}
	b := r.Redact([]byte(s))
	return string(b)
}

// Error redacts an error's message in place and returns it.
func (r Redactor) Error(e *Error) *Error {
	if e == nil {
		return nil
	}
	e.Msg = r.String(e.Msg)
	if e.Err != nil {
		if s := e.Err.Error(); r.String(s) != s {
			e.Err = plainError(r.String(s))
		}
	}
	return e
}

// Response redacts a decoded response in place: its raw body and every
// string decoded from it, in case a secret was escaped in the JSON.
func (r Redactor) Response(resp *chat.Response) {
	if resp == nil {
		return
	}
	resp.Raw = r.Redact(resp.Raw)
	m := &resp.Message
	m.Content, m.Refusal, m.Name, m.ToolCallID = r.String(m.Content), r.String(m.Refusal), r.String(m.Name), r.String(m.ToolCallID)
	for i := range m.ToolCalls {
		tc := &m.ToolCalls[i]
		tc.ID, tc.Name = r.String(tc.ID), r.String(tc.Name)
		if args := r.Redact(tc.Arguments); !bytes.Equal(args, tc.Arguments) {
			if !json.Valid(args) {
				// Keep the transcript valid JSON, as the decoders do.
				args, _ = json.Marshal(string(args))
			}
			tc.Arguments = args
		}
	}
	resp.FinishReason = r.String(resp.FinishReason)
	mt := &resp.Meta
	mt.Provider, mt.ModelID, mt.Fingerprint, mt.RequestID = r.String(mt.Provider), r.String(mt.ModelID), r.String(mt.Fingerprint), r.String(mt.RequestID)
}
