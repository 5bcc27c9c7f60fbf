package framing

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/buildlab/budge/extract"
)

// ParserVersion changes whenever the parser's reading of a reply changes.
const ParserVersion = "framing-parser/2"

// Recovery names a repair the tolerant parser made to read a reply. The
// first ones are the shared extraction's (package extract), so both
// protocols count a repair under one name; the rest are framing's own
// last-resort readers of near-JSON.
const (
	RecoverReasoning     = extract.RepairReasoning   // a <think> block was skipped
	RecoverFenced        = extract.RepairFenced      // the JSON sat in a ``` fence
	RecoverSurrounding   = extract.RepairSurrounding // text before or after the object
	RecoverBold          = extract.RepairBold        // **bold** around the object
	RecoverDuplicate     = extract.RepairDuplicate   // the same object twice
	RecoverInvalidEscape = "invalid-escape"          // backslashes JSON does not allow (LaTeX \frac, \()
	RecoverSingleQuotes  = "single-quotes"           // a Python-style dict with single quotes
	RecoverNumber        = "number-choice"           // "chosen_answer": 1 instead of "1"
	RecoverField         = "field-extraction"        // broken JSON (unescaped quotes, cut off): the field read directly
	RecoverBare          = "bare-choice"             // the whole reply is just 1 or 2
)

// Answer is what the parser read from one reply.
type Answer struct {
	// Choice is "1" (accept), "2" (reject), or "" when the reply could not
	// be read.
	Choice    string `json:"choice"`
	Reasoning string `json:"reasoning,omitempty"`
	// Recovered lists the repairs that were needed, in order; empty when the
	// reply was one valid JSON object as asked. Under strict parsing it lists
	// the repairs that would have read a refused reply, and RepairForbidden
	// is set.
	Recovered       []string `json:"recovered,omitempty"`
	RepairForbidden bool     `json:"repair_forbidden,omitempty"`
	// Empty: the reply had no content. Declined: it held no answer and reads
	// as a plain decline.
	Empty    bool `json:"empty,omitempty"`
	Declined bool `json:"declined,omitempty"`
	// Problem says why a reply is unparseable (or why a recovered one was
	// refused under strict parsing).
	Problem string `json:"problem,omitempty"`
}

// Parsed reports whether a choice was read.
func (a Answer) Parsed() bool { return a.Choice != "" }

var (
	fence       = regexp.MustCompile("(?s)```[a-zA-Z]*\\s*(.*?)\\s*```")
	choiceField = regexp.MustCompile(`["']chosen_answer["']\s*:\s*["']?\s*([12])\b`)
	reasonField = regexp.MustCompile(`(?s)["']reasoning["']\s*:\s*["'](.*)`)
	answerKeys  = []string{"chosen_answer", "reasoning"}
)

// ParseAnswer reads the chosen option and the reasoning from a reply that
// was asked to be {"chosen_answer": "1"|"2", "reasoning": "..."}.
//
// The shared extraction (package extract) reads it first: reasoning blocks
// are skipped, exactly one answer object is required (two that disagree, or
// a key repeated after case-folding, are unparseable). When it finds no
// valid object, framing's own repairs of near-JSON are tried. With tolerant
// set (the default in runs) every repair is recorded in Recovered, so the
// report can say how many answers needed which repair. Without it, any
// reply that is not exactly one valid JSON object with a valid
// chosen_answer is unparseable, and Problem names the repair that would
// have read it.
func ParseAnswer(reply string, tolerant bool) Answer {
	r := extract.Extract(reply, answerKeys)
	var a Answer
	switch r.Failure {
	case extract.FailEmpty:
		return Answer{Problem: "empty reply", Empty: true}
	case extract.FailConflict, extract.FailDuplicateKey, extract.FailReasoning:
		return Answer{Problem: r.Problem, Recovered: r.Repairs}
	case "":
		a = readObject(r)
	default:
		a = nearJSON(r.Text, r.Repairs)
	}
	if !a.Parsed() {
		if a.Problem == "" {
			a.Problem = "no chosen_answer of 1 or 2 could be read"
		}
		a.Declined = (r.Failure == extract.FailNone || r.Failure == extract.FailNotObject) && extract.Declines(r.Text)
		return a
	}
	if len(a.Recovered) > 0 && !tolerant {
		return Answer{Problem: extract.StrictProblem(a.Recovered), Recovered: a.Recovered, RepairForbidden: true}
	}
	return a
}

// readObject reads the one answer object extraction found.
func readObject(r extract.Result) Answer {
	d, _ := decodeObject(string(r.Object))
	a := d.Answer
	a.Recovered = r.Repairs
	if d.number {
		a.Recovered = append(a.Recovered, RecoverNumber)
	}
	return a
}

// nearJSON is the reading of a reply in which no valid JSON object was
// found: the repairs of a fence, surrounding text, LaTeX escapes, single
// quotes, a broken object's field, or a bare choice.
func nearJSON(text string, rec []string) Answer {
	if m := fence.FindStringSubmatch(text); m != nil {
		text = strings.TrimSpace(m[1])
		rec = append(rec, RecoverFenced)
	}
	if i, j := strings.IndexByte(text, '{'), strings.LastIndexByte(text, '}'); i >= 0 && j > i && (i > 0 || j < len(text)-1) {
		text = text[i : j+1]
		rec = append(rec, RecoverSurrounding)
	}
	a, ok := decodeObject(text)
	if !ok {
		if fixed, changed := fixEscapes(text); changed {
			if b, ok2 := decodeObject(fixed); ok2 {
				a, ok = b, true
				rec = append(rec, RecoverInvalidEscape)
			}
		}
	}
	if !ok && strings.Contains(text, "'") {
		if b, ok2 := decodeObject(singleToDouble(text)); ok2 {
			a, ok = b, true
			rec = append(rec, RecoverSingleQuotes)
		}
	}
	if ok && a.number {
		rec = append(rec, RecoverNumber)
	}
	if !ok || a.Choice == "" {
		switch {
		case a.Choice == "" && ok:
			// A valid object without a usable choice: reading the field
			// again cannot help.
			return Answer{Problem: a.Problem, Recovered: rec}
		case choiceField.MatchString(text):
			m := choiceField.FindStringSubmatch(text)
			a = decoded{Answer: Answer{Choice: m[1]}}
			if r := reasonField.FindStringSubmatch(text); r != nil {
				a.Reasoning = strings.TrimRight(strings.TrimSpace(r[1]), `"'}`+"\n ")
			}
			rec = append(rec, RecoverField)
		case text == "1" || text == "2":
			a = decoded{Answer: Answer{Choice: text}}
			rec = append(rec, RecoverBare)
		default:
			return Answer{Problem: "no chosen_answer of 1 or 2 could be read", Recovered: rec}
		}
	}
	out := a.Answer
	out.Recovered = rec
	return out
}

type decoded struct {
	Answer
	number bool
}

func decodeObject(s string) (decoded, bool) {
	var raw struct {
		Choice    json.RawMessage `json:"chosen_answer"`
		Reasoning json.RawMessage `json:"reasoning"`
	}
	if len(s) == 0 || s[0] != '{' {
		return decoded{}, false
	}
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return decoded{}, false
	}
	var d decoded
	c := raw.Choice
	if c == nil {
		d.Problem = "the JSON object has no chosen_answer"
		return d, true
	}
	var str string
	var num float64
	switch {
	case json.Unmarshal(c, &str) == nil:
		str = strings.TrimSpace(str)
	case json.Unmarshal(c, &num) == nil:
		d.number = true
		switch num {
		case 1:
			str = "1"
		case 2:
			str = "2"
		}
	}
	if str != "1" && str != "2" {
		d.Problem = "chosen_answer is " + string(c) + ", not 1 or 2"
		return d, true
	}
	d.Choice = str
	if raw.Reasoning != nil {
		_ = json.Unmarshal(raw.Reasoning, &d.Reasoning)
	}
	return d, true
}

// singleToDouble turns a single-quoted dict into JSON: single quotes that
// delimit strings become double quotes, double quotes inside them are
// escaped. Apostrophes inside words are left alone.
func singleToDouble(s string) string {
	var b strings.Builder
	in := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case in == 0 && (c == '\'' || c == '"'):
			in = c
			b.WriteByte('"')
		case in != 0 && c == '\\' && i+1 < len(s):
			if s[i+1] == '\'' {
				b.WriteByte('\'')
			} else {
				b.WriteByte(c)
				b.WriteByte(s[i+1])
			}
			i++
		case in != 0 && c == in:
			in = 0
			b.WriteByte('"')
		case in == '\'' && c == '"':
			b.WriteString(`\"`)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// fixEscapes doubles every backslash that does not start a valid JSON
// escape (models write LaTeX such as \( or \sqrt inside JSON strings).
func fixEscapes(s string) (string, bool) {
	var b strings.Builder
	changed := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(s) {
			switch n := s[i+1]; n {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				b.WriteByte(c)
				b.WriteByte(n)
				i++
				continue
			case 'u':
				if i+5 < len(s) && isHex(s[i+2:i+6]) {
					b.WriteString(s[i : i+6])
					i += 5
					continue
				}
			}
		}
		b.WriteString(`\\`)
		changed = true
	}
	return b.String(), changed
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}
