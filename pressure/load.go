package pressure

import (
	"embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

//go:embed decks/*.yaml
var builtin embed.FS

// Problem is one thing wrong with a deck, located by file, line and field.
type Problem struct {
	File  string `json:"file"`
	Line  int    `json:"line"`
	Field string `json:"field"`
	Case  string `json:"case,omitempty"`
	Msg   string `json:"message"`
}

func (p Problem) Error() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	if p.Field != "" {
		b.WriteString(": " + p.Field)
	}
	if p.Case != "" {
		b.WriteString(" (case " + p.Case + ")")
	}
	b.WriteString(": " + p.Msg)
	return b.String()
}

// Problems is a list of deck problems that is also an error.
type Problems []Problem

func (ps Problems) Error() string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.Error()
	}
	return strings.Join(s, "\n")
}

// BuiltinDecks lists the names of the embedded decks.
func BuiltinDecks() []string {
	ents, _ := builtin.ReadDir("decks")
	var names []string
	for _, e := range ents {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(names)
	return names
}

// OpenDeck loads a built-in deck by name or a deck file by path, and checks
// it. A deck with problems is returned with them as a Problems error.
func OpenDeck(nameOrPath string) (*Deck, error) {
	data, file, err := readDeck(nameOrPath)
	if err != nil {
		return nil, err
	}
	d, probs := ParseDeck(file, data)
	if d != nil {
		probs = append(probs, d.Check()...)
	}
	if len(probs) > 0 {
		return d, Problems(probs)
	}
	return d, nil
}

func readDeck(nameOrPath string) ([]byte, string, error) {
	if !strings.ContainsAny(nameOrPath, "/\\.") {
		data, err := builtin.ReadFile("decks/" + nameOrPath + ".yaml")
		if err == nil {
			return data, "builtin:" + nameOrPath, nil
		}
		if _, statErr := os.Stat(nameOrPath); statErr != nil {
			return nil, "", fmt.Errorf("no deck named %q: built-in decks are %s; or give a path to a deck file",
				nameOrPath, strings.Join(BuiltinDecks(), ", "))
		}
	}
	file := filepath.Clean(nameOrPath)
	data, err := readDeckFile(file)
	if err != nil {
		return nil, "", err
	}
	return data, file, nil
}

// ParseDeck decodes deck YAML strictly: every unknown key is reported with
// its line, all at once, along with syntax and type errors. A file over one
// of the limits (MaxDeckBytes, MaxDeckTokens, MaxDeckDepth, MaxDeckNodes,
// MaxRepeats, MaxPlannedSessions) is refused with that one problem and no
// deck, before it costs more memory than the limits allow.
func ParseDeck(file string, data []byte) (*Deck, []Problem) {
	tokens, lp := scanDeckLimits(file, data)
	if lp != nil {
		return nil, []Problem{*lp}
	}
	f, err := parser.Parse(tokens, 0)
	if err != nil {
		return nil, []Problem{yamlProblem(file, err)}
	}
	if lp := checkExpansion(file, f); lp != nil {
		return nil, []Problem{*lp}
	}
	if len(f.Docs) != 1 || f.Docs[0].Body == nil {
		return nil, []Problem{{File: file, Line: 1, Msg: "a deck file holds exactly one YAML document"}}
	}
	lines := map[string]int{}
	var probs []Problem
	walk(f.Docs[0].Body, "$", reflect.TypeOf(Deck{}), lines, func(path string, line int, msg string) {
		probs = append(probs, Problem{File: file, Line: line, Field: strings.TrimPrefix(path, "$."), Msg: msg})
	})
	var d Deck
	if err := yaml.UnmarshalWithOptions(data, &d); err != nil {
		probs = append(probs, yamlProblem(file, err))
		return nil, probs
	}
	for i := range probs {
		var k int
		if _, err := fmt.Sscanf(probs[i].Field, "cases[%d]", &k); err == nil && k >= 0 && k < len(d.Cases) {
			probs[i].Case = d.Cases[k].ID
		}
	}
	d.Hash = hashBytes(data)
	d.Path = file
	d.lines = lines
	if lp := checkPlanSize(&d); lp != nil {
		return nil, append(probs, *lp)
	}
	return &d, probs
}

func yamlProblem(file string, err error) Problem {
	var ye yaml.Error
	if errors.As(err, &ye) {
		p := Problem{File: file, Msg: ye.GetMessage()}
		if t := ye.GetToken(); t != nil && t.Position != nil {
			p.Line = t.Position.Line
		}
		return p
	}
	return Problem{File: file, Msg: err.Error()}
}

// walk records the line of every path and reports keys that the Go type t
// does not have. Maps keyed by strings accept any key.
func walk(n ast.Node, path string, t reflect.Type, lines map[string]int, report func(string, int, string)) {
	if n == nil {
		return
	}
	if tok := n.GetToken(); tok != nil && tok.Position != nil {
		if _, seen := lines[path]; !seen {
			lines[path] = tok.Position.Line
		}
	}
	for t != nil && (t.Kind() == reflect.Pointer) {
		t = t.Elem()
	}
	switch v := n.(type) {
	case *ast.MappingNode:
		for _, mv := range v.Values {
			walkPair(mv, path, t, lines, report)
		}
	case *ast.MappingValueNode:
		walkPair(v, path, t, lines, report)
	case *ast.SequenceNode:
		var et reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			et = t.Elem()
		}
		for i, e := range v.Values {
			walk(e, path+"["+strconv.Itoa(i)+"]", et, lines, report)
		}
	}
}

func walkPair(mv *ast.MappingValueNode, path string, t reflect.Type, lines map[string]int, report func(string, int, string)) {
	key := mv.Key.String()
	line := 0
	if tok := mv.Key.GetToken(); tok != nil && tok.Position != nil {
		line = tok.Position.Line
	}
	child := path + "." + key
	lines[child] = line
	var ct reflect.Type
	if t != nil {
		switch t.Kind() {
		case reflect.Struct:
			f, ok := fieldByTag(t, key)
			if !ok {
				report(child, line, fmt.Sprintf("unknown field %q (known: %s)", key, strings.Join(tagNames(t), ", ")))
				return
			}
			ct = f.Type
		case reflect.Map:
			ct = t.Elem()
		}
	}
	walk(mv.Value, child, ct, lines, report)
}

func fieldByTag(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == key && name != "-" {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func tagNames(t reflect.Type) []string {
	var names []string
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// BuiltinDeckBytes returns the file of a built-in deck.
func BuiltinDeckBytes(name string) ([]byte, error) {
	return builtin.ReadFile("decks/" + name + ".yaml")
}

// DeckPaths expands a deck argument of deck check: a built-in name stays as
// it is, a folder becomes every *.yaml and *.yml file in it (sorted), and
// anything else is a file path.
func DeckPaths(arg string) ([]string, error) {
	if _, err := BuiltinDeckBytes(arg); err == nil && !strings.ContainsAny(arg, "/\\.") {
		return []string{arg}, nil
	}
	fi, err := os.Stat(arg)
	if err != nil || !fi.IsDir() {
		return []string{arg}, nil // OpenDeck says what is wrong with it
	}
	var paths []string
	for _, pat := range []string{"*.yaml", "*.yml"} {
		m, err := filepath.Glob(filepath.Join(arg, pat))
		if err != nil {
			return nil, err
		}
		paths = append(paths, m...)
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("%s: no deck files (*.yaml) in this folder", arg)
	}
	slices.Sort(paths)
	return paths, nil
}
