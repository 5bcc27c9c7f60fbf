package framing

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/buildlab/budge/extract"
)

// ParserVersion changes whenever the parser's reading of a reply changes.
const ParserVersion = "framing-parser/3"

// Recovery names a repair the tolerant parser made to read a reply. The
// first ones are the shared extraction's (package extract), so both
// protocols count a repair under one name; the rest are framing's own
// last-resort readers of near-JSON.
const (
	RecoverReasoning     = extract.RepairReasoning     // a <think> block was skipped
	RecoverFenced        = extract.RepairFenced        // the JSON sat in a ``` fence
	RecoverSurrounding   = extract.RepairSurrounding   // text before or after the object
	RecoverBold          = extract.RepairBold          // **bold** around the object
	RecoverDuplicate     = extract.RepairDuplicate     // the same object twice
	RecoverFullWidth     = extract.RepairFullWidth     // full-width or curly punctuation as JSON's
	RecoverTrailingComma = extract.RepairTrailingComma // a comma before } or ]
	RecoverNested        = extract.RepairNested        // the answer inside an outer object
	RecoverKeyVariant    = extract.RepairKeyVariant    // "chosen_anwser", "answer", "choice"
	RecoverRepeated      = extract.RepairRepeated      // two objects, one verdict, reworded reasoning
	RecoverInvalidEscape = "invalid-escape"            // backslashes JSON does not allow (LaTeX \frac, \()
	RecoverSingleQuotes  = extract.RepairSingleQuotes  // a Python-style dict with single quotes
	RecoverNumber        = "number-choice"             // "chosen_answer": 1 instead of "1"
	RecoverField         = "field-extraction"          // broken JSON (unescaped quotes, cut off): the field read directly
	RecoverBare          = "bare-choice"               // the whole reply is just 1 or 2
)

// PaperFallbacks are the repairs whose reading DialDefer's own analysis
// also applied: its extraction of the first {…} span (fence, prose, bold,
// a repeated object, a number for the choice) and its fallbacks when that
// failed (the chosen_answer field read by pattern, which also reads past
// LaTeX escapes, and a reply that starts with the digit). The replication
// of the paper's results rests on these alone; every other repair is
// budge's, beyond the paper, and reports label it so.
var PaperFallbacks = map[string]bool{
	RecoverFenced: true, RecoverSurrounding: true, RecoverBold: true, RecoverDuplicate: true,
	RecoverNumber: true, RecoverField: true, RecoverBare: true, RecoverInvalidEscape: true,
}

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
	// answerAliases are the other names models give the two fields.
	answerAliases = map[string]string{
		"answer": "chosen_answer", "choice": "chosen_answer", "chosen": "chosen_answer", "chosenoption": "chosen_answer",
		"selectedanswer": "chosen_answer", "selectedoption": "chosen_answer", "finalanswer": "chosen_answer", "verdict": "chosen_answer",
		"option": "chosen_answer", "selection": "chosen_answer", "chosenanswerid": "chosen_answer", "答案": "chosen_answer",
		"explanation": "reasoning", "reason": "reasoning", "rationale": "reasoning", "justification": "reasoning", "理由": "reasoning",
	}
)

// ParseOptions say how a reply is read.
type ParseOptions struct {
	// Tolerant applies the repairs (the default in runs); without it only
	// one valid JSON object with a valid chosen_answer is read.
	Tolerant bool
	// Judged are the names of the speaker whose answer is judged, so that
	// "Speaker 2 is correct" reads as option 1 (yes), not as option 2.
	Judged []string
}

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
	return ParseAnswerWith(reply, ParseOptions{Tolerant: tolerant})
}

// ParseAnswerWith is ParseAnswer with the judged speaker's names. Beyond
// the JSON repairs it reads a verdict written as text (an answer label, an
// option named, the option's wording), two objects that state one verdict,
// and an answer field holding the option's words; a reply that states both
// options, hedges, or whose text contradicts its answer object stays
// unparseable with the reason.
func ParseAnswerWith(reply string, o ParseOptions) Answer {
	tolerant := o.Tolerant
	r := extract.ExtractWith(reply, extract.Options{Keys: answerKeys, Aliases: answerAliases})
	var a Answer
	switch r.Failure {
	case extract.FailEmpty:
		return Answer{Problem: "empty reply", Empty: true}
	case extract.FailConflict:
		a = repeated(r, o.Judged)
	case extract.FailDuplicateKey, extract.FailReasoning:
		return Answer{Problem: r.Problem, Recovered: r.Repairs}
	case "":
		a = readObject(r, o.Judged)
		a = againstText(a, r.Rest, o.Judged)
	default:
		a = nearJSON(r.Text, r.Repairs, o.Judged)
	}
	textual := r.Failure == extract.FailNone || r.Failure == extract.FailNotObject || r.Failure == extract.FailInvalid
	if !a.Parsed() && textual && !a.Declined && !extract.Declines(r.Text) {
		c, rec, problem := readTextVerdict(r.Text, o.Judged)
		switch {
		case c != "":
			a = Answer{Choice: c, Recovered: append(append([]string{}, r.Repairs...), rec...)}
		case problem != "":
			a.Problem = problem
		}
	}
	if !a.Parsed() {
		if a.Problem == "" {
			a.Problem = "no chosen_answer of 1 or 2 could be read"
		}
		a.Declined = a.Declined || (r.Failure == extract.FailNone || r.Failure == extract.FailNotObject) && extract.Declines(r.Text)
		return a
	}
	if len(a.Recovered) > 0 && !tolerant {
		return Answer{Problem: extract.StrictProblem(a.Recovered), Recovered: a.Recovered, RepairForbidden: true}
	}
	return a
}

// readObject reads the one answer object extraction found.
func readObject(r extract.Result, judged []string) Answer {
	d, _ := decodeObject(string(r.Object), judged)
	return d.after(r.Repairs)
}

// repeated reads answer objects that disagree only in wording: when every
// one states the same choice, that choice is read.
func repeated(r extract.Result, judged []string) Answer {
	choice := ""
	for _, c := range r.Candidates {
		d, _ := decodeObject(string(c), judged)
		if d.Choice == "" || choice != "" && d.Choice != choice {
			return Answer{Problem: r.Problem, Recovered: r.Repairs}
		}
		choice = d.Choice
	}
	first, _ := decodeObject(string(r.Candidates[0]), judged)
	return first.after(append(append([]string{}, r.Repairs...), RecoverRepeated))
}

// againstText refuses an answer object that the text beside it
// contradicts ("Answer: 2" above {"chosen_answer": "1"}).
func againstText(a Answer, rest string, judged []string) Answer {
	if !a.Parsed() || strings.TrimSpace(rest) == "" {
		return a
	}
	if c, _, _ := readTextVerdict(rest, judged); c != "" && c != a.Choice {
		return Answer{Problem: "the text beside the answer object states option " + c + ", the object option " + a.Choice + ": " + extract.Clip(rest), Recovered: a.Recovered}
	}
	return a
}

// nearJSON is the reading of a reply in which no valid JSON object was
// found: the repairs of a fence, surrounding text, LaTeX escapes, single
// quotes, a broken object's field, or a bare choice.
func nearJSON(text string, rec []string, judged []string) Answer {
	if m := fence.FindStringSubmatch(text); m != nil {
		text = strings.TrimSpace(m[1])
		rec = append(rec, RecoverFenced)
	}
	if i, j := strings.IndexByte(text, '{'), strings.LastIndexByte(text, '}'); i >= 0 && j > i && (i > 0 || j < len(text)-1) {
		text = text[i : j+1]
		rec = append(rec, RecoverSurrounding)
	}
	a, ok := decodeObject(text, judged)
	if !ok {
		if fixed, changed := fixEscapes(text); changed {
			if b, ok2 := decodeObject(fixed, judged); ok2 {
				a, ok = b, true
				rec = append(rec, RecoverInvalidEscape)
			}
		}
	}
	if !ok && strings.Contains(text, "'") {
		if b, ok2 := decodeObject(extract.SingleToDouble(text), judged); ok2 {
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
	out.Recovered = append(rec, a.repairs...)
	return out
}

type decoded struct {
	Answer
	number  bool
	repairs []string
}

// after is the decoded answer read after the repairs that found its
// object: those, then a number read as the choice, then the decoding's own.
func (d decoded) after(found []string) Answer {
	a := d.Answer
	a.Recovered = found
	if d.number {
		a.Recovered = append(a.Recovered, RecoverNumber)
	}
	a.Recovered = append(a.Recovered, d.repairs...)
	return a
}

func decodeObject(s string, judged []string) (decoded, bool) {
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
	var list []json.RawMessage
	switch {
	case string(c) == "null":
		d.Problem = "chosen_answer is null"
		if raw.Reasoning != nil {
			var why string
			_ = json.Unmarshal(raw.Reasoning, &why)
			d.Declined = extract.Declines(why)
			if d.Declined {
				d.Problem = "chosen_answer is null, and the reasoning declines: " + extract.Clip(why)
			}
		}
		return d, true
	case json.Unmarshal(c, &str) == nil:
		str = strings.TrimSpace(str)
		if str != "1" && str != "2" {
			if v := valueChoice(str, judged); v != "" {
				str = v
				d.repairs = append(d.repairs, RecoverFieldText)
			}
		}
	case json.Unmarshal(c, &num) == nil:
		d.number = true
		switch num {
		case 1:
			str = "1"
		case 2:
			str = "2"
		}
	case json.Unmarshal(c, &list) == nil && len(list) == 1:
		var one string
		if json.Unmarshal(list[0], &one) != nil {
			one = string(list[0])
		}
		if v := valueChoice(one, judged); v != "" {
			str = v
			d.repairs = append(d.repairs, RecoverFieldText)
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
