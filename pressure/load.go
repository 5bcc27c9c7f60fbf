package pressure

import (
	"bufio"
	"embed"
	"errors"
	"fmt"
	"io"
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

	"github.com/buildlab/budge/textfile"
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

// InvalidInput marks deck problems as the user's input, which the command
// line maps to its exit code.
func (Problems) InvalidInput() bool { return true }

// BuiltinDecks lists the names of the embedded decks.
func BuiltinDecks() []string {
	names := yamlNames(builtin, "decks")
	sort.Strings(names)
	return names
}

// yamlNames lists the names, without ".yaml", of the files of an embedded
// directory, in the directory's order.
func yamlNames(fsys embed.FS, dir string) []string {
	ents, _ := fsys.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
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
	if fi, err := os.Stat(file); err == nil && fi.IsDir() {
		if file, err = DeckInFolder(file); err != nil {
			return nil, "", err
		}
	}
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
//
// The bytes are read as every text file budge reads (textfile.Decode): a
// byte order mark is dropped, UTF-16 with one is decoded, and a file that is
// not UTF-8 (Latin-1, say) is refused at the line and byte where it stops
// being text, never passed on to a model as replacement characters. The
// deck's hash is that of the bytes as given.
func ParseDeck(file string, raw []byte) (*Deck, []Problem) {
	data, err := textfile.Decode(file, raw)
	if err != nil {
		if te, ok := errors.AsType[*textfile.Error](err); ok {
			return nil, []Problem{{File: file, Line: te.Line, Msg: te.Reason}}
		}
		return nil, []Problem{{File: file, Msg: err.Error()}}
	}
	tokens, lp := scanDeckLimits(file, data)
	if lp != nil {
		return nil, []Problem{*lp}
	}
	f, err := parser.Parse(tokens, 0)
	if err != nil {
		return nil, []Problem{yamlProblem(file, data, err)}
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
		probs = append(probs, yamlProblem(file, data, err))
		return nil, probs
	}
	for i := range probs {
		var k int
		if _, err := fmt.Sscanf(probs[i].Field, "cases[%d]", &k); err == nil && k >= 0 && k < len(d.Cases) {
			probs[i].Case = d.Cases[k].ID
		}
	}
	d.Hash = hashBytes(raw)
	d.Path = file
	d.lines = lines
	if lp := checkPlanSize(&d); lp != nil {
		return nil, append(probs, *lp)
	}
	return &d, probs
}

// yamlProblem is a YAML error of the deck text data, at the line where the
// problem starts and in plain words when it is a syntax error
// (textfile.YAMLSyntax).
func yamlProblem(file string, data []byte, err error) Problem {
	var ye yaml.Error
	if errors.As(err, &ye) {
		p := Problem{File: file, Msg: ye.GetMessage()}
		if t := ye.GetToken(); t != nil && t.Position != nil {
			p.Line = t.Position.Line
		}
		if _, syntax := errors.AsType[*yaml.SyntaxError](err); syntax {
			p.Line, p.Msg = textfile.YAMLSyntax(string(data), p.Line, p.Msg)
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
// it is, a folder becomes every deck file under it (DeckFiles, sorted), and
// anything else is a file path. skipped lists the YAML files under a folder
// that are not deck files, so that the caller can say so.
func DeckPaths(arg string) (paths, skipped []string, err error) {
	if _, err := BuiltinDeckBytes(arg); err == nil && !strings.ContainsAny(arg, "/\\.") {
		return []string{arg}, nil, nil
	}
	fi, err := os.Stat(arg)
	if err != nil || !fi.IsDir() {
		return []string{arg}, nil, nil // OpenDeck says what is wrong with it
	}
	paths, skipped, err = DeckFiles(arg)
	if err != nil {
		return nil, nil, err
	}
	if len(paths) == 0 {
		return nil, skipped, fmt.Errorf("%s: no deck files in this folder or below it (a deck file is a *.yaml or *.yml file "+
			"with format: %s or a cases: key)%s", arg, DeckFormat, skippedNote(skipped))
	}
	return paths, skipped, nil
}

// DeckFiles walks a folder and its subfolders (not hidden ones, such as
// .git) for deck files: *.yaml and *.yml files whose top level declares
// "format: budge/pressure-deck/..." or has a "cases:" key. Other YAML files
// (a simulator profile, a CI config) are returned as others. Both sorted.
func DeckFiles(dir string) (decks, others []string, err error) {
	err = filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if path != dir && strings.HasPrefix(e.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := strings.ToLower(filepath.Ext(path)); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		if looksLikeDeck(path) {
			decks = append(decks, path)
		} else {
			others = append(others, path)
		}
		return nil
	})
	slices.Sort(decks)
	slices.Sort(others)
	return decks, others, err
}

// looksLikeDeck reads the top-level keys of a YAML file's first part for a
// deck's format or cases. A file that cannot be read counts as a deck, so
// that opening it says what is wrong.
func looksLikeDeck(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return true
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, MaxDeckBytes))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "cases:") {
			return true
		}
		if v, ok := strings.CutPrefix(line, "format:"); ok {
			return strings.HasPrefix(strings.Trim(strings.TrimSpace(v), `"'`), "budge/pressure-deck/")
		}
	}
	return false
}

func skippedNote(skipped []string) string {
	if len(skipped) == 0 {
		return ""
	}
	return "; not deck files: " + strings.Join(skipped, ", ")
}

// DeckInFolder is the one deck file under a folder, for --deck DIR: an
// error names the files when there is none or several.
func DeckInFolder(dir string) (string, error) {
	decks, others, err := DeckFiles(dir)
	if err != nil {
		return "", fmt.Errorf("reading deck folder: %w", err)
	}
	switch len(decks) {
	case 1:
		return decks[0], nil
	case 0:
		return "", fmt.Errorf("%s is a folder with no deck file in it or below it (a deck file is a *.yaml or *.yml file with format: %s or a cases: key)%s; "+
			"budge deck init %s writes a starting deck there", dir, DeckFormat, skippedNote(others), dir)
	}
	return "", fmt.Errorf("%s is a folder with %d deck files: %s; give one of them", dir, len(decks), strings.Join(decks, ", "))
}
