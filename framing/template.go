package framing

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/buildlab/budge/textfile"
)

// Template file names in a template directory. The first two are required;
// the naturalistic pair is optional (budge's own is used when absent).
const (
	StatementFile        = "c1_statement.tmpl"
	DialogueFile         = "c2_dialogue.tmpl"
	NaturalStatementFile = "n1_statement.tmpl"
	NaturalDialogueFile  = "n2_dialogue.tmpl"
)

// Placeholders a template may use. Anything else in braces is left as it is,
// so templates can show JSON examples.
var Placeholders = []string{"{question}", "{answer}", "{speaker1}", "{speaker2}", "{context}", "{dialogue}", "{judger}", "{judgee}"}

//go:embed templates
var builtinTemplates embed.FS

// Templates is one wording of the prompts: a statement template (C1) and a
// dialogue template (C2), and optionally their naturalistic counterparts.
type Templates struct {
	Name             string `json:"name"`
	Source           string `json:"source"` // builtin:NAME or the directory read
	Statement        string `json:"statement"`
	Dialogue         string `json:"dialogue"`
	NaturalStatement string `json:"natural_statement,omitempty"`
	NaturalDialogue  string `json:"natural_dialogue,omitempty"`
}

// BuiltinTemplateNames lists budge's own template sets: "budge" (the
// default) and two paraphrases of it for crossing.
func BuiltinTemplateNames() []string {
	ents, _ := builtinTemplates.ReadDir("templates")
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// DefaultTemplates is budge's own wording.
func DefaultTemplates() *Templates {
	t, err := OpenTemplates("budge")
	if err != nil {
		panic(err) // embedded at build time
	}
	return t
}

// OpenTemplates returns a built-in template set by name, or reads a
// directory holding c1_statement.tmpl and c2_dialogue.tmpl (and optionally
// n1_statement.tmpl, n2_dialogue.tmpl). Files are used byte for byte.
func OpenTemplates(ref string) (*Templates, error) {
	var fsys fs.FS
	t := &Templates{}
	if !strings.ContainsAny(ref, `/\.`) {
		sub, err := fs.Sub(builtinTemplates, "templates/"+ref)
		if err != nil {
			return nil, err
		}
		if _, err := fs.Stat(sub, StatementFile); err != nil {
			return nil, fmt.Errorf("templates: no built-in set %q (built in: %s; or give a directory)", ref, strings.Join(BuiltinTemplateNames(), ", "))
		}
		fsys, t.Name, t.Source = sub, ref, "builtin:"+ref
	} else {
		fi, err := os.Stat(ref)
		if err != nil {
			return nil, fmt.Errorf("templates: %w", err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("templates: %s is not a directory (it should hold %s and %s)", ref, StatementFile, DialogueFile)
		}
		abs, _ := filepath.Abs(ref)
		fsys, t.Name, t.Source = os.DirFS(ref), filepath.Base(abs), ref
	}
	read := func(name string, required bool) (string, error) {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			if !required && errors.Is(err, fs.ErrNotExist) {
				return "", nil
			}
			return "", fmt.Errorf("templates %s: %w", t.Source, err)
		}
		text, err := textfile.Decode(filepath.Join(t.Source, name), b)
		if err != nil {
			return "", fmt.Errorf("templates: %w", err)
		}
		return string(text), nil
	}
	var err error
	if t.Statement, err = read(StatementFile, true); err != nil {
		return nil, err
	}
	if t.Dialogue, err = read(DialogueFile, true); err != nil {
		return nil, err
	}
	if t.NaturalStatement, err = read(NaturalStatementFile, false); err != nil {
		return nil, err
	}
	if t.NaturalDialogue, err = read(NaturalDialogueFile, false); err != nil {
		return nil, err
	}
	if errs := t.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("templates %s: %s", t.Source, strings.Join(errs, "; "))
	}
	return t, nil
}

// Hash is the sha256 (hex) of the set's four texts: what a manifest
// records and what runs are compared by.
func (t *Templates) Hash() string {
	h := sha256.Sum256([]byte(t.Statement + "\x00" + t.Dialogue + "\x00" + t.NaturalStatement + "\x00" + t.NaturalDialogue))
	return hex.EncodeToString(h[:])
}

// Validate reports placeholders a template needs but lacks.
func (t *Templates) Validate() []string {
	var p []string
	need := func(file, text string, ph ...string) {
		for _, x := range ph {
			if !strings.Contains(text, x) {
				p = append(p, fmt.Sprintf("%s: lacks the placeholder %s", file, x))
			}
		}
	}
	need(StatementFile, t.Statement, "{question}", "{answer}")
	need(DialogueFile, t.Dialogue, "{question}", "{answer}", "{speaker2}")
	if strings.Contains(t.Statement, "{speaker2}") {
		p = append(p, StatementFile+": names {speaker2}, but the statement condition has no speakers")
	}
	if (t.NaturalStatement == "") != (t.NaturalDialogue == "") {
		p = append(p, fmt.Sprintf("give both %s and %s, or neither", NaturalStatementFile, NaturalDialogueFile))
	}
	if t.NaturalStatement != "" {
		need(NaturalStatementFile, t.NaturalStatement, "{answer}", "{dialogue}")
		need(NaturalDialogueFile, t.NaturalDialogue, "{answer}", "{dialogue}", "{judger}")
	}
	return p
}

// Render fills a template in one pass: values are inserted as they are, and
// placeholders inside inserted values are not expanded again.
func Render(tmpl string, values map[string]string) string {
	pairs := make([]string, 0, 2*len(values))
	for _, ph := range Placeholders {
		if v, ok := values[ph]; ok {
			pairs = append(pairs, ph, v)
		}
	}
	return strings.NewReplacer(pairs...).Replace(tmpl)
}

// Prompt renders the user prompt of an item in a condition. The question
// and answer text are inserted byte for byte, so C1 and C2 of the same
// content carry identical question and answer text.
func (t *Templates) Prompt(c Condition, it *Item, labels LabelSet) (string, error) {
	if it.Dialogue != nil {
		return "", fmt.Errorf("item %s is naturalistic: render it with NaturalPrompt", it.ID)
	}
	answer := it.Incorrect
	if c.AnswerCorrect() {
		answer = it.Correct
	}
	question := it.Question
	v := map[string]string{"{question}": question, "{answer}": answer, "{speaker1}": labels.Speaker1, "{speaker2}": labels.Speaker2,
		"{context}": it.Context}
	if c.Dialogue() {
		return Render(t.Dialogue, v), nil
	}
	return Render(t.Statement, v), nil
}
