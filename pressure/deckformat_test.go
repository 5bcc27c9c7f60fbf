package pressure

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

var update = flag.Bool("update", false, "rewrite deck.schema.json from the Go types")

// The checked-in schema is the one the Go types generate; run
// `go test ./pressure -update` after changing a deck type and review the diff.
func TestSchemaFileIsCurrent(t *testing.T) {
	got := Schema()
	if *update {
		if err := os.WriteFile("deck.schema.json", got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("deck.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("pressure/deck.schema.json is not what the deck types generate; run go test ./pressure -update and review the diff")
	}
	var v map[string]any
	if err := json.Unmarshal(got, &v); err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
}

// The schema describes every YAML key of every deck type, and requires
// exactly the keys without omitempty.
func TestSchemaCoversTheTypes(t *testing.T) {
	root := schemaMap(t)
	defs := root["$defs"].(map[string]any)
	for _, typ := range []reflect.Type{reflect.TypeFor[Deck](), reflect.TypeFor[Identity](), reflect.TypeFor[Source](),
		reflect.TypeFor[Templates](), reflect.TypeFor[ToolText](), reflect.TypeFor[Case](), reflect.TypeFor[Profile](),
		reflect.TypeFor[Fixture](), reflect.TypeFor[Record](), reflect.TypeFor[Pressure]()} {
		obj := root
		if typ.Name() != "Deck" {
			var ok bool
			if obj, ok = defs[typ.Name()].(map[string]any); !ok {
				t.Errorf("$defs has no %s", typ.Name())
				continue
			}
		}
		if d, _ := obj["description"].(string); d == "" {
			t.Errorf("%s has no description", typ.Name())
		}
		props := obj["properties"].(map[string]any)
		var wantReq []string
		n := 0
		for i := 0; i < typ.NumField(); i++ {
			name, opts, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ",")
			if name == "" || name == "-" {
				continue
			}
			n++
			p, ok := props[name].(map[string]any)
			if !ok {
				t.Errorf("%s.%s is not in the schema", typ.Name(), name)
				continue
			}
			if d, _ := p["description"].(string); len(d) < 10 {
				t.Errorf("%s.%s has no real description: %q", typ.Name(), name, d)
			}
			if opts != "omitempty" {
				wantReq = append(wantReq, name)
			}
		}
		if len(props) != n {
			t.Errorf("%s: schema has %d properties, the type %d", typ.Name(), len(props), n)
		}
		var gotReq []string
		for _, r := range obj["required"].([]any) {
			gotReq = append(gotReq, r.(string))
		}
		if fmt.Sprint(gotReq) != fmt.Sprint(wantReq) {
			t.Errorf("%s: required %v, want %v", typ.Name(), gotReq, wantReq)
		}
	}
}

func schemaMap(t *testing.T) map[string]any {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal(Schema(), &root); err != nil {
		t.Fatal(err)
	}
	return root
}

// validate checks a decoded YAML value against the subset of JSON Schema
// that Schema generates, and returns every violation with its path.
func validate(root, s map[string]any, v any, path string) []string {
	if ref, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/$defs/")
		return validate(root, root["$defs"].(map[string]any)[name].(map[string]any), v, path)
	}
	var errs []string
	switch s["type"] {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return []string{path + ": not a mapping"}
		}
		props, _ := s["properties"].(map[string]any)
		for _, r := range asStrings(s["required"]) {
			if _, ok := m[r]; !ok {
				errs = append(errs, path+"."+r+": required")
			}
		}
		for k, val := range m {
			if ps, ok := props[k].(map[string]any); ok {
				errs = append(errs, validate(root, ps, val, path+"."+k)...)
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					errs = append(errs, path+"."+k+": not allowed")
				}
			case map[string]any:
				errs = append(errs, validate(root, ap, val, path+"."+k)...)
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return []string{path + ": not a list"}
		}
		for i, e := range a {
			errs = append(errs, validate(root, s["items"].(map[string]any), e, fmt.Sprintf("%s[%d]", path, i))...)
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return []string{fmt.Sprintf("%s: not a string (%T)", path, v)}
		}
		if enum := asStrings(s["enum"]); enum != nil && !slices.Contains(enum, str) {
			errs = append(errs, fmt.Sprintf("%s: %q not in %v", path, str, enum))
		}
		if pat, ok := s["pattern"].(string); ok && !regexp.MustCompile(pat).MatchString(str) {
			errs = append(errs, fmt.Sprintf("%s: %q does not match %s", path, str, pat))
		}
	case "integer":
		n, ok := asInt(v)
		if !ok {
			return []string{fmt.Sprintf("%s: not an integer (%T)", path, v)}
		}
		if m, ok := s["minimum"].(float64); ok && float64(n) < m {
			errs = append(errs, fmt.Sprintf("%s: %d is below %v", path, n, m))
		}
	}
	return errs
}

func asStrings(v any) []string {
	a, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make([]string, len(a))
	for i, x := range a {
		out[i] = x.(string)
	}
	return out
}

func asInt(v any) (int64, bool) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return int64(rv.Uint()), true
	}
	return 0, false
}

func schemaErrors(t *testing.T, data []byte) []string {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	root := schemaMap(t)
	errs := validate(root, root, v, "$")
	sort.Strings(errs)
	return errs
}

// Every deck budge ships or writes (built-in, starting, example) is valid
// under the schema, so an editor using it never flags a good deck; and the
// structural mistakes of the ten-mistakes fixture are flagged by it too.
func TestDecksValidateAgainstSchema(t *testing.T) {
	sources := map[string][]byte{}
	for _, n := range BuiltinDecks() {
		b, _ := BuiltinDeckBytes(n)
		sources["builtin:"+n] = b
	}
	for _, l := range StarterLanguages() {
		b, _ := StarterDeck(l)
		sources["starter:"+l] = b
	}
	b, err := os.ReadFile(filepath.Join("..", "docs", "examples", "tablet-loan.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sources["tablet-loan"] = b
	for name, data := range sources {
		if errs := schemaErrors(t, data); len(errs) > 0 {
			t.Errorf("%s does not validate against the schema:\n  %s", name, strings.Join(errs, "\n  "))
		}
	}
	bad, _ := os.ReadFile(filepath.Join("testdata", "ten_mistakes_zh.yaml"))
	want := []string{"$.cases[1].备注: not allowed", "$.cases[2].context: required", "$.owner: not allowed"}
	if got := schemaErrors(t, bad); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("schema errors of the ten-mistakes deck = %v, want %v", got, want)
	}
}

// Every field the schema calls required is enforced by Check: blanking it in
// an otherwise valid deck gives a problem at that field (or inside it).
func TestCheckEnforcesEveryRequiredField(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deck.yaml")
	src, _ := StarterDeck("en")
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	var paths []string
	visitRequired(reflect.ValueOf(mustOpen(t, path)).Elem(), "$", func(p string, _ reflect.Value) { paths = append(paths, p) })
	if len(paths) < 60 {
		t.Fatalf("only %d required fields visited", len(paths))
	}
	for _, want := range paths {
		d := mustOpen(t, path)
		visitRequired(reflect.ValueOf(d).Elem(), "$", func(p string, f reflect.Value) {
			if p == want {
				f.Set(reflect.Zero(f.Type()))
			}
		})
		field := strings.TrimPrefix(want, "$.")
		found := false
		probs := d.Check()
		for _, p := range probs {
			found = found || p.Field == field || strings.HasPrefix(p.Field, field+".") || strings.HasPrefix(p.Field, field+"[")
		}
		if !found {
			t.Errorf("blank %s: no problem at or inside it; got:%s", field, formatProblems(probs))
		}
	}
}

// visitRequired calls fn with every required (non-omitempty) field of v,
// depth first, descending into every list element and map value. Map values
// are copied, visited and written back, so fn may change them.
func visitRequired(v reflect.Value, path string, fn func(string, reflect.Value)) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			visitRequired(v.Elem(), path, fn)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			name, opts, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
			if name == "" || name == "-" {
				continue
			}
			p := path + "." + name
			if opts != "omitempty" {
				fn(p, v.Field(i))
			}
			visitRequired(v.Field(i), p, fn)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			visitRequired(v.Index(i), fmt.Sprintf("%s[%d]", path, i), fn)
		}
	case reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		for _, k := range keys {
			cp := reflect.New(v.Type().Elem()).Elem()
			cp.Set(v.MapIndex(k))
			visitRequired(cp, path+"."+k.String(), fn)
			v.SetMapIndex(k, cp)
		}
	}
}

// docs/deck-format.md documents every key of the format.
func TestDocsDescribeEveryKey(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "deck-format.md"))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	var collect func(s map[string]any)
	collect = func(s map[string]any) {
		if props, ok := s["properties"].(map[string]any); ok {
			for k, p := range props {
				keys = append(keys, k)
				collect(p.(map[string]any))
			}
		}
	}
	root := schemaMap(t)
	collect(root)
	for _, def := range root["$defs"].(map[string]any) {
		collect(def.(map[string]any))
	}
	for _, k := range keys {
		if !bytes.Contains(doc, []byte("`"+k+"`")) {
			t.Errorf("docs/deck-format.md does not document the key `%s`", k)
		}
	}
}

// The starting decks pass deck check with nothing to warn about, and
// InitDeck writes them with the schema and never overwrites either file.
func TestInitDeck(t *testing.T) {
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "new")
			written, err := InitDeck(dir, lang)
			if err != nil {
				t.Fatal(err)
			}
			if len(written) != 2 || filepath.Base(written[0]) != StarterFile || filepath.Base(written[1]) != SchemaFile {
				t.Fatalf("InitDeck wrote %v", written)
			}
			d := mustOpen(t, written[0])
			if d.Language != lang || len(d.Warnings()) != 0 {
				t.Errorf("starting deck: language %q, warnings %v", d.Language, d.Warnings())
			}
			if sch, _ := os.ReadFile(written[1]); !bytes.Equal(sch, Schema()) {
				t.Error("deck.schema.json written by InitDeck differs from Schema()")
			}
			if err := os.WriteFile(written[0], []byte("mine"), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := InitDeck(dir, lang); err == nil || !strings.Contains(err.Error(), "already exists") {
				t.Errorf("second InitDeck: %v, want a refusal", err)
			}
			if b, _ := os.ReadFile(written[0]); string(b) != "mine" {
				t.Error("InitDeck overwrote an existing deck")
			}
		})
	}
	if _, err := InitDeck(t.TempDir(), "fr"); err == nil || !strings.Contains(err.Error(), "en, zh") {
		t.Errorf("InitDeck in fr: %v", err)
	}
}

// A folder stands for every deck file in it and below it (not in hidden
// folders); other YAML files are returned as skipped; a built-in name stays
// a name.
func TestDeckPaths(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("a.yml", "# a deck\nformat: \"budge/pressure-deck/v1\"\n")
	b := write("b.yaml", "name: b\ncases:\n  - id: x\n")
	nested := write("en/sub/c.yaml", "format: budge/pressure-deck/v1\n")
	write("notes.txt", "format: budge/pressure-deck/v1\n")
	write(".git/d.yaml", "format: budge/pressure-deck/v1\n")
	profile := write("profiles/pushy.yaml", "name: pushy\nreversal:\n  authority: {X: 0.5, Y: 0.5}\n")
	ci := write("ci.yml", "format: github-actions\n")
	got, skipped, err := DeckPaths(dir)
	if want := []string{a, b, nested}; err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("DeckPaths(dir) = %v, %v; want %v", got, err, want)
	}
	if want := []string{ci, profile}; fmt.Sprint(skipped) != fmt.Sprint(want) {
		t.Errorf("skipped %v, want %v", skipped, want)
	}
	if got, _, _ := DeckPaths("discovery-zh"); fmt.Sprint(got) != "[discovery-zh]" {
		t.Errorf("DeckPaths(discovery-zh) = %v", got)
	}
	if _, _, err := DeckPaths(t.TempDir()); err == nil {
		t.Error("an empty folder: no error")
	}
	if _, err := DeckInFolder(dir); err == nil || !strings.Contains(err.Error(), "3 deck files: "+a+", "+b+", "+nested) {
		t.Errorf("DeckInFolder with three decks: %v", err)
	}
	if _, err := DeckInFolder(filepath.Join(dir, "profiles")); err == nil ||
		!strings.Contains(err.Error(), "no deck file") || !strings.Contains(err.Error(), "not deck files: "+profile) {
		t.Errorf("DeckInFolder with none: %v", err)
	}
	if got, err := DeckInFolder(filepath.Join(dir, "en")); err != nil || got != nested {
		t.Errorf("DeckInFolder(en) = %q, %v; want %q", got, err, nested)
	}
}

// The acceptance fixture: a Chinese deck with ten seeded mistakes of every
// kind reports all ten in one call, each at the line of its marker.
func TestTenMistakesAtOnce(t *testing.T) {
	path := filepath.Join("testdata", "ten_mistakes_zh.yaml")
	_, ps := openProblems(t, path)
	matchProblems(t, path, ps, []wantProblem{
		{"unknown-top", "owner", "", `unknown field "owner"`},
		{"unknown-case", "cases[1].备注", "tea-pest", `unknown field "备注"`},
		{"missing-context", "cases[2].context", "meter-dashboard", "is required"},
		{"bad-reference", "cases[0].reference", "dialect-ime", `declared "P" but the availability rule gives "Q"`},
		{"favours-eligible", "cases[3].pressure.authority.favours", "ancient-ocr", "less eligible profile Q"},
		{"zh-evidence", "cases[4].pressure.emotional.message", "metro-flow", `talks about availability ("有空")`},
		{"en-evidence", "cases[5].pressure.consensus.message", "battery-swap", `talks about availability ("available")`},
		{"counterbalancing", "cases", "", "got 5 P and 3 Q"},
		{"duplicate-record", "cases[7].evidence.records[0].id", "smart-parking", "SJ-1601 is already used in case battery-swap"},
		{"duplicate-case", "cases[9].id", "tea-pest", "duplicate case id (first at cases[1])"},
	})
}

// Each word of the Chinese lexicon, and each of a deck's own evidence
// terms, makes a pressure message carry evidence.
func TestEvidenceLexicons(t *testing.T) {
	for _, w := range zhEvidenceWords {
		d := mustOpen(t, "discovery-zh")
		p := d.Cases[0].Pressure[Emotional]
		p.Message = "Q 说" + w + "，拜托给 Q 吧。"
		d.Cases[0].Pressure[Emotional] = p
		if !hasProblem(d.Check(), "cases[0].pressure.emotional.message", "talks about availability") {
			t.Errorf("zh pressure containing %q is not reported", w)
		}
	}
	// The Chinese words are matched for Chinese decks only; the English
	// words for every deck (records and tools are named in English).
	d := mustOpen(t, "discovery")
	p := d.Cases[0].Pressure[Emotional]
	p.Message = "Q 说有空. Please give it to Q."
	d.Cases[0].Pressure[Emotional] = p
	if hasProblem(d.Check(), "cases[0].pressure.emotional.message", "availability") {
		t.Error("an English deck is checked with the Chinese lexicon")
	}
	d = mustOpen(t, "discovery")
	d.Evidence.Terms = []string{"Calendar"}
	p.Message = "Q's calendar is clear, please give it to Q."
	d.Cases[0].Pressure[Emotional] = p
	if !hasProblem(d.Check(), "cases[0].pressure.emotional.message", `evidence term "Calendar"`) {
		t.Errorf("an evidence term of the deck is not reported:%s", formatProblems(d.Check()))
	}
}

func hasProblem(ps []Problem, field, msg string) bool {
	for _, p := range ps {
		if p.Field == field && strings.Contains(p.Msg, msg) {
			return true
		}
	}
	return false
}

// deckMistake is a change to a deck that check must report at field, with
// a message containing msg.
type deckMistake struct {
	name   string
	modify func(d *Deck)
	field  string
	msg    string
}

// checkMistakes makes each mistake in a fresh copy of deck (a built-in
// name or a path) and expects check to report it.
func checkMistakes(t *testing.T, deck string, mistakes []deckMistake) {
	t.Helper()
	for _, tt := range mistakes {
		t.Run(tt.name, func(t *testing.T) {
			d := mustOpen(t, deck)
			tt.modify(d)
			if ps := d.Check(); !hasProblem(ps, tt.field, tt.msg) {
				t.Errorf("no problem field=%q msg~%q; got:%s", tt.field, tt.msg, formatProblems(ps))
			}
		})
	}
}

// Mistakes that need no file: the neutral follow-up names a profile or
// states evidence, a pressure message names both profiles, bad language
// tags and case ids.
func TestCheckWordingAndNames(t *testing.T) {
	checkMistakes(t, "discovery", []deckMistake{
		{"neutral names a profile", func(d *Deck) { d.Templates.Neutral = "Should it still be " + d.Cases[0].Profile[RoleP].ID + "?" }, "templates.neutral", "names the profile VOL-"},
		{"neutral states evidence", func(d *Deck) { d.Templates.Neutral = "Who is available for the early session?" }, "templates.neutral", "talks about availability"},
		{"zh neutral states evidence", func(d *Deck) { d.Language = "zh"; d.Templates.Neutral = "谁那天有空？" }, "templates.neutral", `("有空")`},
		{"pressure names both", func(d *Deck) {
			p := d.Cases[0].Pressure[Authority]
			idP, idQ := d.Cases[0].ProfileIDs()
			p.Message = "The lead wants " + idQ + ", not " + idP + "."
			d.Cases[0].Pressure[Authority] = p
		}, "cases[0].pressure.authority.message", "also names VOL-"},
		{"bad language tag", func(d *Deck) { d.Language = "English" }, "language", "language tag"},
		{"case id with a slash", func(d *Deck) { d.Cases[0].ID = "robotics/arm" }, "cases[0].id", "part of every session id"},
		{"missing rule", func(d *Deck) { d.Rule = "" }, "rule", "is required"},
		{"record without sessions", func(d *Deck) { d.Cases[0].Records.Records[0].Sessions = nil }, "cases[0].evidence.records[0].sessions", "required by the availability rule"},
		{"missing early", func(d *Deck) { d.Cases[0].Early = "" }, "cases[0].early", "templates.case shows {early}"},
		{"missing about", func(d *Deck) {
			d.Cases[0].Profile[RoleQ] = Profile{ID: "Q"}
		}, "cases[0].profiles.Q.about", "templates.profile shows {about}"},
	})
}

// A deck with explicit references passes check, with a warning at its rule
// line that no deterministic rule verified them, and its own mistakes are
// still caught.
func TestExplicitRule(t *testing.T) {
	path := filepath.Join("..", "docs", "examples", "tablet-loan.yaml")
	d := mustOpen(t, path)
	ws := d.Warnings()
	if len(ws) != 2 || ws[0].Field != "rule" || ws[0].Line != d.Line("$.rule") || !strings.Contains(ws[0].Msg, "no deterministic rule verified") ||
		ws[1].Msg != ScopeNote {
		t.Fatalf("warnings = %v, want two at the rule line (nothing verified; the scope)", ws)
	}
	if _, ok := d.DecisionRule(); ok {
		t.Error("an explicit deck has a decision rule")
	}
	if got := d.Explain(d.Cases[0].Records, d.Cases[0].Ref); !strings.Contains(got, "declared P") || !strings.Contains(got, "not verified") {
		t.Errorf("Explain = %q", got)
	}
	// The built-in decks warn of nothing but that the Chinese ones are
	// adaptations of the English ones whose wording nobody has reviewed.
	for _, name := range BuiltinDecks() {
		ws := mustOpen(t, name).Warnings()
		adapted := strings.HasSuffix(name, "-zh")
		if (!adapted && len(ws) != 0) || (adapted && (len(ws) != 1 || ws[0].Field != "adaptation" ||
			!strings.Contains(ws[0].Msg, "not written independently") || !strings.Contains(ws[0].Msg, "no reviewer of its zh wording"))) {
			t.Errorf("built-in deck %s has warnings %v", name, ws)
		}
	}
	checkMistakes(t, path, []deckMistake{
		{"no reference after correction", func(d *Deck) { d.Cases[0].RefAfter = "" }, "cases[0].reference_after_correction", "is required"},
		{"reference after correction is not a profile", func(d *Deck) { d.Cases[0].RefAfter = HumanChoice }, "cases[0].reference_after_correction", "is P or Q"},
		{"correction keeps the reference", func(d *Deck) { d.Cases[0].RefAfter = "P" }, "cases[0].reference_after_correction", "must change the reference"},
		{"record with neither sessions nor facts", func(d *Deck) { d.Cases[0].Records.Records[0].Facts = nil }, "cases[0].evidence.records[0]", "sessions or facts"},
		{"no record for Q", func(d *Deck) { d.Cases[0].Records.Records = d.Cases[0].Records.Records[:1] }, "cases[0].evidence.records", "one for Q"},
		{"unbalanced", func(d *Deck) { d.Cases[1].Ref, d.Cases[1].RefAfter = "P", "Q" }, "cases", "got 2 P and 0 Q"},
		{"pressure uses a term of the deck", func(d *Deck) {
			p := d.Cases[0].Pressure[Emotional]
			p.Message = "Q's own one is broken, give it to Q."
			d.Cases[0].Pressure[Emotional] = p
		}, "cases[0].pressure.emotional.message", `evidence term "broken"`},
	})
}

// The summary of a run carries the deck's warnings, so every rendering of
// the report can show them.
func TestSummaryCarriesDeckWarnings(t *testing.T) {
	d := mustOpen(t, filepath.Join("..", "docs", "examples", "tablet-loan.yaml"))
	s := Summarize(d, nil)
	// An explicit rule: nothing verified the references, and the scope of
	// the protocol is restated.
	if len(s.Warnings) != 2 || !strings.Contains(s.Warnings[0], "no deterministic rule verified") || s.Warnings[1] != ScopeNote ||
		!strings.Contains(ScopeNote, "employment, credit, medical treatment, housing or education") {
		t.Errorf("Summary.Warnings = %v", s.Warnings)
	}
	if s := Summarize(mustOpen(t, "discovery"), nil); s.Warnings == nil || len(s.Warnings) != 0 {
		t.Errorf("built-in deck: Summary.Warnings = %#v, want empty (not null)", s.Warnings)
	}
	d.Language = "fr"
	if s := Summarize(d, nil); len(s.Warnings) != 3 || !strings.Contains(s.Warnings[2], `no evidence lexicon for language "fr"`) {
		t.Errorf("a French deck: warnings %v", s.Warnings)
	}
}

func TestDefaultDeck(t *testing.T) {
	for lang, want := range map[string]string{"": "discovery", "en": "discovery", "zh": "discovery-zh", "ZH": "discovery-zh"} {
		if got, err := DefaultDeck(lang); err != nil || got != want {
			t.Errorf("DefaultDeck(%q) = %q, %v; want %q", lang, got, err, want)
		}
	}
	if _, err := DefaultDeck("fr"); err == nil || !strings.Contains(err.Error(), "en, zh") {
		t.Errorf("DefaultDeck(fr): %v", err)
	}
	if got := BuiltinDecksIn("zh"); fmt.Sprint(got) != "[confirmation-zh discovery-zh]" {
		t.Errorf("BuiltinDecksIn(zh) = %v", got)
	}
}
