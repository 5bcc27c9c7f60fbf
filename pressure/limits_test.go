package pressure

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/buildlab/budge/testkit/limitstest"
	"github.com/goccy/go-yaml/lexer"
)

// aliasBomb is a "billion laughs" deck of about 400 bytes: nine levels of
// anchors, each a list of nine aliases of the one before, ending in a string
// field, which the YAML library expands to text in full (9^9 strings).
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("evidence:\n  terms: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\ntemplates:\n")
	prev, size, total, marked := "a", 10, 10, false
	for i, k := range []string{"application", "case", "profile", "neutral", "correction_notice"} {
		name := string(rune('b' + i))
		fmt.Fprintf(&b, "  %s: &%s [%s]", k, name, strings.TrimSuffix(strings.Repeat("*"+prev+",", 9), ","))
		// The nodes of this line, then of all so far: the limit is crossed
		// at the first line that takes the total over it.
		size = 9*size + 1
		total += size
		if total > MaxDeckNodes && !marked {
			b.WriteString(" # MARK:bomb")
			marked = true
		}
		b.WriteString("\n")
		prev = name
	}
	fmt.Fprintf(&b, "name: &g [%s]\n", strings.TrimSuffix(strings.Repeat("*"+prev+",", 9), ","))
	b.WriteString("title: [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n")
	return b.String()
}

// withRepeats is the built-in discovery deck with its repeats replaced.
func withRepeats(t *testing.T, repeats string) string {
	t.Helper()
	base, err := BuiltinDeckBytes("discovery")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^repeats: \d+$`)
	if !re.Match(base) {
		t.Fatal("the discovery deck has no repeats line")
	}
	return re.ReplaceAllString(string(base), "repeats: "+repeats+" # MARK:repeats")
}

// refused opens a hostile deck file and checks that it is refused with one
// problem naming the file, the line (0 when the problem concerns the whole
// file) and the limit, and that refusing it allocates under 200 MB.
func refused(t *testing.T, path string, line int, limit string) Problem {
	t.Helper()
	var d *Deck
	var err error
	limitstest.Refuse(t, path, func() { d, err = OpenDeck(path) })
	if d != nil {
		t.Errorf("OpenDeck(%s) returned a deck over a limit", path)
	}
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("OpenDeck(%s) = %v (%T), want Problems", path, err, err)
	}
	if len(ps) != 1 {
		t.Fatalf("got %d problems, want 1:%s", len(ps), formatProblems(ps))
	}
	p := ps[0]
	if p.File != path || p.Line != line || !strings.Contains(p.Msg, limit) {
		t.Errorf("problem %q: want file %s, line %d and a message naming %s", p.Error(), path, line, limit)
	}
	return p
}

func TestDeckAliasBombRefused(t *testing.T) {
	src := aliasBomb()
	if len(src) > 450 {
		t.Fatalf("the bomb is %d bytes, meant to be about 400", len(src))
	}
	path := limitstest.WriteFile(t, "bomb.yaml", src)
	p := refused(t, path, markerLine(t, path, "bomb"), "MaxDeckNodes")
	if !strings.Contains(p.Msg, fmt.Sprint(MaxDeckNodes)) {
		t.Errorf("the message should state the limit: %s", p.Msg)
	}
}

// An alias bomb of long strings stays under MaxDeckNodes but not under
// MaxDeckBytes of expanded text.
func TestDeckAliasTextBombRefused(t *testing.T) {
	long := strings.Repeat("x", 64<<10)
	src := "title: &a \"" + long + "\"\nname: &b [*a,*a,*a,*a,*a,*a,*a,*a]\nformat: [*b,*b,*b,*b] # MARK:text\n"
	path := limitstest.WriteFile(t, "textbomb.yaml", src)
	refused(t, path, markerLine(t, path, "text"), "MaxDeckBytes")
}

// A few aliases are still YAML a deck may use.
func TestDeckSmallAliasesAccepted(t *testing.T) {
	base, err := BuiltinDeckBytes("discovery")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^title: .*$`)
	src := re.ReplaceAllString(strings.Replace(string(base), "\nname: discovery\n", "\nname: &n discovery\n", 1), "title: *n")
	if !strings.Contains(src, "&n") || !strings.Contains(src, "title: *n") {
		t.Fatal("the replacements did not apply")
	}
	d, probs := ParseDeck("aliases.yaml", []byte(src))
	if d == nil || len(probs) > 0 {
		t.Fatalf("a deck with a small alias was refused:%s", formatProblems(probs))
	}
	if d.Title != "discovery" {
		t.Errorf("title = %q, want the alias expanded", d.Title)
	}
}

func TestDeckHugeRepeatsRefused(t *testing.T) {
	path := limitstest.WriteFile(t, "repeats.yaml", withRepeats(t, "100000000"))
	p := refused(t, path, markerLine(t, path, "repeats"), "MaxRepeats")
	if p.Field != "repeats" || !strings.Contains(p.Msg, "100000000") || !strings.Contains(p.Msg, "1000") {
		t.Errorf("the problem should name repeats, its value and the limit: %v", p)
	}
}

func TestDeckRepeatsAtLimitAccepted(t *testing.T) {
	path := limitstest.WriteFile(t, "repeats.yaml", withRepeats(t, fmt.Sprint(MaxRepeats)))
	d := mustOpen(t, path)
	if n := len(Plan(d)); n > MaxPlannedSessions {
		t.Errorf("a deck at MaxRepeats plans %d sessions, over MaxPlannedSessions", n)
	}
}

// The planned sessions are bounded even when repeats is within its limit.
func TestDeckPlannedSessionsRefused(t *testing.T) {
	d := &Deck{Path: "many.yaml", Repeats: MaxRepeats, lines: map[string]int{"$.repeats": 9}}
	for i := 0; i < 42; i++ { // 42 x 24 x 1000 = 1,008,000
		d.Cases = append(d.Cases, Case{ID: fmt.Sprint("c", i), Kind: Determinate})
	}
	p := checkPlanSize(d)
	if p == nil {
		t.Fatal("1,008,000 planned sessions were not refused")
	}
	if p.File != "many.yaml" || p.Line != 9 || !strings.Contains(p.Msg, "1008000") || !strings.Contains(p.Msg, "MaxPlannedSessions") {
		t.Errorf("problem %v should name the file, the line of repeats, the count and the limit", p)
	}
	d.Cases = d.Cases[:41] // 984,000
	if p := checkPlanSize(d); p != nil {
		t.Errorf("984,000 planned sessions refused: %v", p)
	}
}

func TestDeckNestedBracketsRefused(t *testing.T) {
	for _, c := range []struct {
		name, src string
		line      int
	}{
		// 200 KB of brackets: refused from the byte estimate, before the
		// YAML library reads it.
		{"brackets", strings.Repeat("[", 200_000), 1},
		{"brackets-lines", strings.Repeat("[\n", 100_000), MaxDeckDepth + 1},
		// Under the token estimate: the tokens are measured.
		{"flow", "cases: " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "\n", 1},
		{"flow-lines", "cases:\n" + strings.Repeat(" [\n", 5000), MaxDeckDepth + 1},
		// Brackets hidden from the byte estimate inside quotes.
		{"quoted", "cases: " + strings.Repeat(`[ "]" `, 10_000), 1},
		{"block-dashes", strings.Repeat("- ", 20_000) + "x\n", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := limitstest.WriteFile(t, c.name+".yaml", c.src)
			refused(t, path, c.line, "MaxDeckDepth")
		})
	}
}

func TestDeckNestedBlockMappingsRefused(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&b, "%sk%d:\n", strings.Repeat(" ", i), i)
	}
	path := limitstest.WriteFile(t, "block.yaml", b.String())
	refused(t, path, MaxDeckDepth+1, "MaxDeckDepth")
}

func TestDeckTooManyTokensRefused(t *testing.T) {
	path := limitstest.WriteFile(t, "dense.yaml", "cases: ["+strings.Repeat("[],", 100_000)+"]\n")
	refused(t, path, 1, "MaxDeckTokens")
}

func TestDeckTooLargeRefused(t *testing.T) {
	src := strings.Repeat("# a comment line that makes the file large\n", MaxDeckBytes/40)
	path := limitstest.WriteFile(t, "large.yaml", src)
	p := refused(t, path, 0, "MaxDeckBytes")
	if !strings.Contains(p.Msg, fmt.Sprint(len(src))) || !strings.Contains(p.Msg, "1 MiB") {
		t.Errorf("the message should state the size and the limit: %s", p.Msg)
	}
	// ParseDeck, which decks stored with runs go through, refuses it too.
	if d, ps := ParseDeck("stored", []byte(src)); d != nil || len(ps) != 1 || !strings.Contains(ps[0].Msg, "MaxDeckBytes") {
		t.Errorf("ParseDeck of a large deck = %v, %v", d, ps)
	}
}

// The built-in decks and the documented example are far inside the limits,
// and the nesting measure finds the depth the format needs.
func TestDecksWithinLimits(t *testing.T) {
	files := map[string][]byte{}
	for _, n := range BuiltinDecks() {
		b, err := BuiltinDeckBytes(n)
		if err != nil {
			t.Fatal(err)
		}
		files[n] = b
	}
	examples, _ := filepath.Glob("../docs/examples/*.yaml")
	for _, e := range examples {
		b, err := os.ReadFile(e)
		if err != nil {
			t.Fatal(err)
		}
		files[e] = b
	}
	if len(files) < 5 {
		t.Fatalf("found %d decks, want the built-in ones and the examples", len(files))
	}
	for name, b := range files {
		if len(b)*20 > MaxDeckBytes {
			t.Errorf("%s: %d bytes is close to MaxDeckBytes", name, len(b))
		}
		tokens := lexer.Tokenize(string(b))
		if len(tokens)*20 > MaxDeckTokens {
			t.Errorf("%s: %d tokens is close to MaxDeckTokens", name, len(tokens))
		}
		if deepest, _ := nesting(tokens, MaxDeckDepth); deepest != 7 {
			t.Errorf("%s: nesting %d, want 7 (a record's sessions)", name, deepest)
		}
		d, probs := ParseDeck(name, b)
		if d == nil || len(probs) > 0 {
			t.Errorf("%s: %v", name, Problems(probs))
		}
	}
}

func BenchmarkHostileDecks(b *testing.B) {
	discovery, err := BuiltinDeckBytes("discovery")
	if err != nil {
		b.Fatal(err)
	}
	repeats := regexp.MustCompile(`(?m)^repeats: \d+$`).ReplaceAll(discovery, []byte("repeats: 100000000"))
	for _, c := range []struct{ name, src string }{
		{"alias-bomb", aliasBomb()},
		{"repeats", string(repeats)},
		{"nested-200KB", strings.Repeat("[", 200_000)},
		{"quoted-nesting", "cases: " + strings.Repeat(`[ "]" `, 10_000)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if d, _ := ParseDeck(c.name, []byte(c.src)); d != nil {
					b.Fatal("not refused")
				}
			}
		})
	}
}
