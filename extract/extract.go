// Package extract reads one structured answer out of a model's free-text
// reply, for every protocol: it skips reasoning blocks, finds the candidate
// JSON objects (the whole reply, fenced blocks, balanced {…} spans in prose),
// requires exactly one answer among them, and names every repair it needed
// to get there, so a report can say how much of a verdict rests on leniency.
//
// It never guesses: two answer objects that disagree, or an object whose
// keys repeat after case-folding, are failures, never first-wins or
// last-wins. It imports no store, runner, study or provider, and knows no
// protocol's schema beyond the keys it is told an answer object has.
package extract

import (
	"bytes"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Repairs, by stable name. Reports and exports count answers by these
// names; renaming one changes every reading of a run.
const (
	// RepairReasoning: a reasoning block (<think>…</think> and the like)
	// was skipped; it never supplies the answer.
	RepairReasoning = "reasoning-block"
	// RepairFenced: the JSON sat in a ``` fence.
	RepairFenced = "fenced-code"
	// RepairSurrounding: prose before or after the object.
	RepairSurrounding = "surrounding-text"
	// RepairBold: **bold** (or __bold__) markup around the object.
	RepairBold = "bold-markup"
	// RepairDuplicate: the same object appeared more than once.
	RepairDuplicate = "duplicate-object"
	// RepairIDMarkup: markup (**, __, `) around an id.
	RepairIDMarkup = "id-markup"
	// RepairIDPadding: spaces around an id.
	RepairIDPadding = "id-padding"
	// RepairIDCase: an id written in another letter case.
	RepairIDCase = "id-case"
	// RepairFullWidth: full-width or curly punctuation (：，｛｝［］＂ “ ”)
	// written where JSON has its ASCII punctuation.
	RepairFullWidth = "full-width-punctuation"
	// RepairTrailingComma: a comma before a closing } or ].
	RepairTrailingComma = "trailing-comma"
	// RepairSingleQuotes: a Python-style dict with single quotes.
	RepairSingleQuotes = "single-quotes"
	// RepairNested: the answer object sat as the one value of an outer
	// object ({"recommendation": {...}}).
	RepairNested = "nested-object"
	// RepairKeyVariant: a key spelled otherwise than asked (misspelled,
	// camel case, spaces, a synonym the protocol names).
	RepairKeyVariant = "key-variant"
	// RepairRepeated: two answer objects that differ only in wording but
	// state the same answer (the protocol decides what "the same" is).
	RepairRepeated = "repeated-answer"
)

// Failure kinds: why no answer object was read.
const (
	FailEmpty        = "empty"            // nothing but white space
	FailReasoning    = "reasoning-only"   // nothing outside a reasoning block
	FailNone         = "no-object"        // no JSON answer object at all
	FailInvalid      = "invalid-json"     // an object-like span that is not JSON
	FailConflict     = "conflicting"      // two answer objects that disagree
	FailDuplicateKey = "duplicate-key"    // a key repeated after case-folding
	FailNotObject    = "not-an-object"    // valid JSON, but not an object
	FailStrict       = "repair-forbidden" // strict parsing: a repair was needed
)

// Result is what Extract read from one reply.
type Result struct {
	// Object is the one answer object, as the model wrote it; nil on failure.
	Object json.RawMessage
	// Text is the reply without its reasoning blocks, trimmed: what a
	// decline is looked for in, and what a protocol's own last-resort
	// readers see.
	Text string
	// Repairs are the repairs applied, in order.
	Repairs []string
	// Failure is empty on success, else one of the Fail kinds; Problem
	// says it in words.
	Failure string
	Problem string
	// Candidates are every answer object found, with canonical keys (on
	// FailConflict, the objects that disagree: a protocol may still read
	// them when they state the same answer).
	Candidates []json.RawMessage
	// Rest is Text without the answer objects (and their fences): what a
	// protocol looks in for a verdict that contradicts the object.
	Rest string
}

// OK reports whether one answer object was read.
func (r Result) OK() bool { return r.Failure == "" }

// Extract finds the one answer object in reply. keys are the answer's field
// names: an object with none of them (a quoted record, an example) is not a
// candidate. Nothing is refused for needing a repair here; see Strict.
func Extract(reply string, keys []string) Result {
	return ExtractWith(reply, Options{Keys: keys})
}

// Options say what an answer object is.
type Options struct {
	// Keys are the answer's field names, as asked.
	Keys []string
	// Aliases map further names models use for a field (lower case,
	// letters and digits only, e.g. "answer") to its name in Keys.
	Aliases map[string]string
}

// ExtractWith is Extract with aliases for the answer's keys: an object
// whose keys are spelled otherwise (misspelled, camel case, an alias) is
// read under the asked names, and the repair is named.
func ExtractWith(reply string, o Options) Result {
	if strings.TrimSpace(reply) == "" {
		return Result{Failure: FailEmpty, Problem: "empty reply"}
	}
	text, skipped, open := stripReasoning(reply)
	r := Result{Text: strings.TrimSpace(text)}
	if skipped {
		r.Repairs = append(r.Repairs, RepairReasoning)
	}
	if r.Text == "" {
		r.Failure, r.Problem = FailReasoning, "only a reasoning block, no answer after it"
		if open {
			r.Problem = "an unterminated reasoning block, no answer after it"
		}
		return r
	}
	cands, invalid := candidates(r.Text, o)
	var fixes []string
	if len(cands) == 0 {
		if t, fx, cs := fixedCandidates(r.Text, o); len(cs) > 0 {
			r.Text, fixes, cands = t, fx, cs
		}
	}
	if len(cands) == 0 {
		return r.fail(noCandidate(r.Text, invalid))
	}
	for _, c := range cands {
		if k, dup := duplicateKey(c.raw); dup {
			return r.fail(FailDuplicateKey, "the key "+k+" appears twice in the answer (after case-folding): which one is meant cannot be told")
		}
		if c.collide != "" {
			return r.fail(FailDuplicateKey, "two keys of the answer stand for "+c.collide+": which one is meant cannot be told")
		}
	}
	for _, c := range cands {
		r.Candidates = append(r.Candidates, c.canon)
	}
	r.Rest = strings.TrimSpace(outside(r.Text, cands))
	first := cands[0]
	for _, c := range cands[1:] {
		if !sameJSON(first.canon, c.canon) {
			return r.fail(FailConflict, "two answer objects that disagree: "+Clip(string(first.raw))+" and "+Clip(string(c.raw)))
		}
	}
	r.Object = first.canon
	r.Repairs = append(r.Repairs, fixes...)
	r.Repairs = append(r.Repairs, wrapping(r.Text, cands)...)
	if len(cands) > 1 {
		r.Repairs = append(r.Repairs, RepairDuplicate)
	}
	for _, c := range cands[:1] {
		r.Repairs = append(r.Repairs, c.repairs...)
	}
	return r
}

func (r Result) fail(kind, problem string) Result {
	r.Failure, r.Problem = kind, problem
	return r
}

// noCandidate says why no answer object was found.
func noCandidate(text string, invalid error) (string, string) {
	if invalid != nil {
		return FailInvalid, "invalid JSON answer: " + invalid.Error()
	}
	var v any
	if json.Unmarshal([]byte(text), &v) == nil {
		return FailNotObject, "the reply is JSON but not an answer object: " + Clip(text)
	}
	return FailNone, "no JSON answer object: " + Clip(text)
}

// StrictProblem says why strict parsing refused a reply that repairs would
// have read.
func StrictProblem(repairs []string) string {
	return "not one valid JSON object with exact ids, as asked (tolerant parsing would repair: " + strings.Join(repairs, ", ") + ")"
}

var reasoningTags = []string{"think", "thinking", "reasoning"}

// stripReasoning removes reasoning blocks. A block left open swallows the
// rest of the reply (open is then true); a closing tag without its opening
// one ends a block that began with the reply (some chat templates put the
// opening tag in the prompt).
func stripReasoning(s string) (text string, skipped, open bool) {
	for _, tag := range reasoningTags {
		var sk, op bool
		s, sk, op = stripTag(s, "<"+tag+">", "</"+tag+">")
		skipped, open = skipped || sk, open || op
	}
	return s, skipped, open
}

func stripTag(s, o, c string) (text string, skipped, open bool) {
	for {
		i, j := indexFold(s, o), indexFold(s, c)
		switch {
		case i >= 0 && j > i:
			s = s[:i] + " " + s[j+len(c):]
		case j >= 0:
			s = s[j+len(c):]
		case i >= 0:
			s, open = s[:i], true
		default:
			return s, skipped, open
		}
		skipped = true
	}
}

// indexFold is strings.Index for an ASCII needle, ignoring letter case.
// A needle that starts with a byte other than a letter (a tag's "<") is
// looked for from each place that byte stands.
func indexFold(s, sub string) int {
	if sub != "" && !('a' <= sub[0]|0x20 && sub[0]|0x20 <= 'z') {
		for from := 0; ; {
			i := strings.IndexByte(s[from:], sub[0])
			if i < 0 || from+i+len(sub) > len(s) {
				return -1
			}
			if from += i; strings.EqualFold(s[from:from+len(sub)], sub) {
				return from
			}
			from++
		}
	}
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}

type candidate struct {
	raw        json.RawMessage
	canon      json.RawMessage // raw with its keys under the asked names
	repairs    []string        // nested-object, key-variant
	collide    string          // two keys that stand for one asked name
	start, end int             // byte span in the text
}

var fenceRE = regexp.MustCompile("(?s)```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```")

// candidates returns the answer objects of text: top-level balanced {…}
// spans that are valid JSON and carry at least one of the answer's keys
// (or the one object inside such a span that does). invalid is the
// decoding error of the first object-like span that is not JSON, when no
// span is a candidate.
func candidates(text string, o Options) ([]candidate, error) {
	out, invalid := candidatesBy(text, o, true)
	if len(out) == 0 && invalid == nil {
		// Only when no object has an asked key does a variant make one
		// (a quoted record {"record_id": …} in prose is no answer).
		out, invalid = candidatesBy(text, o, false)
	}
	return out, invalid
}

func candidatesBy(text string, o Options, exactOnly bool) ([]candidate, error) {
	var out []candidate
	var invalid error
	for _, sp := range braceSpans(text) {
		raw := text[sp[0]:sp[1]]
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(raw), &obj); err != nil {
			if invalid == nil {
				invalid = err
			}
			continue
		}
		c := candidate{raw: json.RawMessage(raw), start: sp[0], end: sp[1]}
		if inner, ok := nested(obj, o, exactOnly); ok {
			c.canon, c.repairs, c.collide = canonical(inner, o)
			c.repairs = append([]string{RepairNested}, c.repairs...)
			out = append(out, c)
			continue
		}
		if hasKey(obj, o, exactOnly) {
			c.canon, c.repairs, c.collide = canonical(obj, o)
			out = append(out, c)
		}
	}
	if len(out) > 0 {
		invalid = nil
	}
	return out, invalid
}

// nested returns the answer object that is the one value of an outer
// object without answer keys.
func nested(obj map[string]json.RawMessage, o Options, exactOnly bool) (map[string]json.RawMessage, bool) {
	if len(obj) != 1 || hasKey(obj, o, false) {
		return nil, false
	}
	for _, v := range obj {
		var inner map[string]json.RawMessage
		if json.Unmarshal(v, &inner) == nil && hasKey(inner, o, exactOnly) {
			return inner, true
		}
	}
	return nil, false
}

func hasKey(obj map[string]json.RawMessage, o Options, exactOnly bool) bool {
	if len(o.Keys) == 0 {
		return true
	}
	for k := range obj {
		if _, exact, ok := KeyName(k, o); ok && (exact || !exactOnly) {
			return true
		}
	}
	return false
}

// KeyName says which asked key k stands for: exact is true when k is the
// key as asked, up to letter case and surrounding space (JSON decoding
// reads those alike); otherwise k is a variant: the same letters and
// digits ("recordIds", "Record IDs"), an alias, or a misspelling within
// one edit (two for keys of ten letters or more).
func KeyName(k string, o Options) (name string, exact, ok bool) {
	for _, want := range o.Keys {
		if strings.EqualFold(strings.TrimSpace(k), want) {
			return want, true, true
		}
	}
	f := fold(k)
	if f == "" {
		return "", false, false
	}
	for _, want := range o.Keys {
		if f == fold(want) {
			return want, false, true
		}
	}
	if a, ok := o.Aliases[f]; ok {
		return a, false, true
	}
	var near []string
	for _, want := range o.Keys {
		w := fold(want)
		limit := 1
		if len(w) >= 10 {
			limit = 2
		}
		if len(w) >= 6 && editDistance(f, w) <= limit {
			near = append(near, want)
		}
	}
	if len(near) == 1 {
		return near[0], false, true
	}
	return "", false, false
}

// fold keeps the lower-cased ASCII letters and digits of s.
func fold(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// editDistance is the optimal-string-alignment distance (insertions,
// deletions, substitutions, adjacent transpositions) of two ASCII strings.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// canonical renames an object's key variants to the asked names; a key no
// asked name stands for is kept as written. Two keys that land on one
// name keep both spellings, so the duplicate-key check sees them.
func canonical(obj map[string]json.RawMessage, o Options) (json.RawMessage, []string, string) {
	out := map[string]json.RawMessage{}
	var repairs []string
	collide := ""
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		v := obj[k]
		name, exact, ok := KeyName(k, o)
		switch {
		case !ok || exact:
			name = k
		case len(o.Keys) > 0:
			if len(repairs) == 0 {
				repairs = append(repairs, RepairKeyVariant)
			}
		}
		if _, taken := out[name]; taken {
			collide = name
			name = k
		}
		out[name] = v
	}
	b, _ := json.Marshal(out)
	return b, repairs, collide
}

// braceSpans finds the top-level balanced {…} spans of s, reading JSON
// strings inside a span so braces in them do not count. An unbalanced span
// runs to the end of s.
func braceSpans(s string) [][2]int {
	var spans [][2]int
	depth, start := 0, -1
	var str jsonString
	for i := 0; i < len(s); i++ {
		c := s[i]
		if depth > 0 && str.holds(c) {
			continue
		}
		switch c {
		case '{':
			if depth == 0 {
				start = i
			}
			depth++
		case '}':
			if depth > 0 {
				depth--
				if depth == 0 {
					spans = append(spans, [2]int{start, i + 1})
				}
			}
		}
	}
	if depth > 0 {
		spans = append(spans, [2]int{start, len(s)})
	}
	return spans
}

// outside is text without the candidates: a fence that holds one goes
// whole, else the candidates' spans.
func outside(text string, cands []candidate) string {
	if fencedCands(text, cands) {
		return fenceRE.ReplaceAllStringFunc(text, func(f string) string {
			if strings.Contains(f, "{") {
				return ""
			}
			return f
		})
	}
	var b strings.Builder
	last := 0
	for _, c := range cands {
		b.WriteString(text[last:c.start])
		last = c.end
	}
	b.WriteString(text[last:])
	return b.String()
}

func fencedCands(text string, cands []candidate) bool {
	for _, m := range fenceRE.FindAllStringSubmatchIndex(text, -1) {
		for _, c := range cands {
			if c.start >= m[2] && c.end <= m[3] {
				return true
			}
		}
	}
	return false
}

// wrapping names what surrounds the candidates: a fence, bold markup,
// prose.
func wrapping(text string, cands []candidate) []string {
	var out []string
	if fencedCands(text, cands) {
		out = append(out, RepairFenced)
	}
	rest := strings.TrimSpace(outside(text, cands))
	bare := strings.TrimSpace(markup.Replace(rest))
	switch {
	case rest == "":
	case bare == "":
		out = append(out, RepairBold)
	default:
		out = append(out, RepairSurrounding)
	}
	return out
}

// duplicateKey reports the first key of an object (valid JSON, as every
// candidate is) that repeats within its object, at any depth, after
// case-folding (encoding/json would silently keep the last one). It scans
// the bytes: a key is decoded only when it holds an escape or a non-ASCII
// byte.
func duplicateKey(raw []byte) (string, bool) {
	var stack []map[string]bool // one per open object or array (nil)
	key := false                // the next string is an object's key
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '{':
			stack = append(stack, map[string]bool{})
			key = true
		case '[':
			stack = append(stack, nil)
			key = false
		case '}', ']':
			if stack = stack[:len(stack)-1]; len(stack) == 0 {
				return "", false
			}
			key = false
		case ',':
			key = stack[len(stack)-1] != nil
		case '"':
			end := i + 1
			plain := true
			for ; end < len(raw) && raw[end] != '"'; end++ {
				if raw[end] == '\\' {
					end++
					plain = false
				} else if raw[end] >= utf8.RuneSelf {
					plain = false
				}
			}
			if end >= len(raw) {
				return "", false // not JSON: no string ends
			}
			if key {
				k := string(raw[i+1 : end])
				if !plain && json.Unmarshal(raw[i:end+1], &k) != nil {
					return "", false
				}
				f := strings.ToLower(strings.TrimSpace(k))
				seen := stack[len(stack)-1]
				if seen[f] {
					return k, true
				}
				seen[f] = true
				key = false
			}
			i = end
		}
	}
	return "", false
}

func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	p, _ := json.Marshal(x)
	q, _ := json.Marshal(y)
	return bytes.Equal(p, q)
}

// Clip shortens s for a problem message: white space folded to single
// spaces, then at most 120 characters, "…" marking a cut.
func Clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 120 {
		return string(r[:120]) + "…"
	}
	return s
}

// markup drops emphasis characters, to tell bold markup around an answer
// from prose; built once (a Replacer's table is large to build).
var markup = strings.NewReplacer("*", "", "_", "")

// IndexToken is the index of the first tok in s that stands as a token of
// its own, with no word character (as isWord says) right before or right
// after it (so the id "P" is not found in "Please"), or -1. Each protocol
// says what joins a token: letters and digits, hyphens, CJK or not.
func IndexToken(s, tok string, isWord func(rune) bool) int {
	for from := 0; ; {
		i := strings.Index(s[from:], tok)
		if i < 0 {
			return -1
		}
		start, end := from+i, from+i+len(tok)
		before, _ := utf8.DecodeLastRuneInString(s[:start])
		after, _ := utf8.DecodeRuneInString(s[end:])
		if (start == 0 || !isWord(before)) && (end == len(s) || !isWord(after)) {
			return start
		}
		from = start + 1
	}
}
