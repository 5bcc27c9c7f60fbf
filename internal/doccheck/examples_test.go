package doccheck

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buildlab/budge/internal/cli"
	"github.com/buildlab/budge/testkit/paralleltest"
)

// TestMain lets the collector run less often: the documented commands run
// whole decks in this process, allocating much and keeping little.
func TestMain(m *testing.M) {
	paralleltest.FewerCollections()
	os.Exit(m.Run())
}

// helpPages are the commands whose --help has examples.
var helpPages = [][]string{
	{}, {"run"}, {"framing"}, {"framing", "run"}, {"framing", "report"}, {"framing", "import"},
	{"framing", "export-training"}, {"worker"}, {"report"}, {"view"}, {"review"}, {"judge"},
	{"export"}, {"compare"}, {"calibrate"}, {"deck", "init"}, {"deck", "check"}, {"deck", "schema"},
	{"deck", "freeze"}, {"show"}, {"selftest"}, {"runs"}, {"sim", "serve"},
}

// notOffline lists what a help example may need that a test on a fresh
// machine does not have; such an example is named in the log, not run.
// Everything else runs and must exit 0.
var notOffline = []struct {
	re  *regexp.Regexp
	why string
}{
	{regexp.MustCompile(`--model (openai|anthropic|openrouter|ollama):|--judge openai:|openai-compatible:qwen`), "a model behind an API"},
	{regexp.MustCompile(`postgres://`), "a PostgreSQL server"},
	{regexp.MustCompile(`\bdialdefer/|results/qwen|train\.jsonl`), "DialDefer's released data"},
	{regexp.MustCompile(`\b(BEFORE|AFTER|DISCOVERY_BEFORE|RUN_A|JUDGE_RUN|BASE_RUN)\b|\d{8}-\d{6}-[0-9a-f]{6}|sha256:3f2a`), "runs or artifacts named by id"},
	{regexp.MustCompile(`^budge (view|sim serve|worker --follow)`), "serves until stopped"},
	{regexp.MustCompile(`--sweep --target-gap`), "a minute of calibration"},
	{regexp.MustCompile(`items\.jsonl|truthfulqa\.csv|my-templates`), "data or templates of your own"},
	{regexp.MustCompile(`--tokens ~/`), "writes to the home directory"},
}

// TestHelpExamples runs every example of every help text on a store that
// holds one run of the built-in deck on the simulator, in process, and
// fails on a non-zero exit.
func TestHelpExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the help examples run whole decks")
	}
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	template := t.TempDir()
	t.Chdir(template)
	clearEnv(t)
	var out bytes.Buffer
	if code := cli.Main(context.Background(), []string{"run", "--quiet"}, nil, &out, io.Discard); code != 0 {
		t.Fatalf("budge run: exit %d", code)
	}
	runID := ""
	for _, l := range strings.Split(out.String(), "\n") {
		if id, ok := strings.CutPrefix(l, "run: "); ok {
			runID = id
			break
		}
	}
	if runID == "" {
		t.Fatalf("budge run printed no run id:\n%.500s", out.String())
	}
	// The simulator behind the OpenAI-compatible API, where examples name
	// 127.0.0.1:8088.
	port := freePort(t)
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		cli.Main(ctx, []string{"sim", "serve", "--addr", port}, nil, io.Discard, io.Discard)
	}()
	defer func() { stop(); <-served }()
	waitListening(t, port)
	skipped := 0
	for _, page := range helpPages {
		out.Reset()
		cli.Main(context.Background(), append(append([]string{}, page...), "--help"), nil, &out, io.Discard)
		examples := helpExamples(out.String())
		if len(page) > 0 && len(examples) == 0 && page[0] != "framing" {
			t.Errorf("budge %s --help has no examples", strings.Join(page, " "))
		}
		name := "budge " + strings.Join(page, " ")
		t.Run(strings.Join(append([]string{"help"}, page...), "_"), func(t *testing.T) {
			ws := t.TempDir()
			copyDir(t, filepath.Join(template, "budge-runs"), filepath.Join(ws, "budge-runs"))
			t.Chdir(ws)
			// What the examples take a user to have: the repository's docs
			// (docs/examples/...), a deck of their own (budge deck init), and
			// on the framing pages a framing run as the latest.
			if err := os.Symlink(filepath.Join(root, "docs"), filepath.Join(ws, "docs")); err != nil {
				t.Fatal(err)
			}
			if !regexp.MustCompile(`deck init \./my-deck(\s|$)`).MatchString(strings.Join(examples, "\n")) {
				mustRun(t, "budge deck init ./my-deck")
			}
			if len(page) > 0 && page[0] == "framing" {
				mustRun(t, "budge framing run --quiet")
			}
			for _, ex := range examples {
				ex = regexp.MustCompile(`\bRUN\b`).ReplaceAllString(ex, runID)
				ex = strings.ReplaceAll(ex, "127.0.0.1:8088", port)
				// A calibration's examples run at 20 replications: any number
				// takes the same path through the command, and the Monte
				// Carlo's numbers are pressure/calibrate's tests' to check.
				if rest, ok := strings.CutPrefix(ex, "budge calibrate"); ok {
					ex = "budge calibrate --replications 20" + replications.ReplaceAllString(rest, "")
				}
				if why := offlineReason(ex); why != "" {
					t.Logf("%s: not run (needs %s): %s", name, why, ex)
					skipped++
					continue
				}
				runLine(t, ex, nil)
			}
		})
	}
	t.Logf("%d help examples need what a test machine lacks and were not run", skipped)
}

var replications = regexp.MustCompile(` --replications \d+`)

func offlineReason(ex string) string {
	for _, n := range notOffline {
		if n.re.MatchString(ex) {
			return n.why
		}
	}
	return ""
}

// helpExamples are the command lines under "Examples:" of a help text.
func helpExamples(help string) []string {
	i := strings.Index(help, "\nExamples:\n")
	if i < 0 {
		return nil
	}
	var out []string
	for _, l := range strings.Split(help[i+len("\nExamples:\n"):], "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "budge ") || strings.HasPrefix(l, "export ") {
			out = append(out, l)
		}
	}
	return out
}

// TestRunnableDocBlocks runs every code block of README.md and docs/*.md
// marked ```sh runnable, page by page on a fresh store, in process. A line
// ending in & is started in the background (a server) and stopped when
// the page is done; 127.0.0.1:8088 stands for a free port.
func TestRunnableDocBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the doc examples run whole decks")
	}
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	pages, _ := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	pages = append([]string{filepath.Join("..", "..", "README.md")}, pages...)
	total := 0
	for _, page := range pages {
		doc, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		blocks := runnableBlocks(string(doc))
		if len(blocks) == 0 {
			continue
		}
		t.Run(filepath.Base(page), func(t *testing.T) {
			ws := t.TempDir()
			t.Chdir(ws)
			clearEnv(t)
			// Paths in the docs are relative to the repository (docs/examples/...).
			if err := os.Symlink(filepath.Join(root, "docs"), filepath.Join(ws, "docs")); err != nil {
				t.Fatal(err)
			}
			port := freePort(t)
			var bg sync.WaitGroup
			ctx, stop := context.WithCancel(context.Background())
			defer func() { stop(); bg.Wait() }()
			for _, b := range blocks {
				for _, l := range b {
					l = strings.ReplaceAll(l, "127.0.0.1:8088", port)
					total++
					if strings.HasSuffix(l, "&") {
						l = strings.TrimSpace(strings.TrimSuffix(l, "&"))
						bg.Add(1)
						go func() {
							defer bg.Done()
							cli.Main(ctx, words(l)[1:], nil, io.Discard, io.Discard)
						}()
						waitListening(t, port)
						continue
					}
					runLine(t, l, nil)
				}
			}
		})
	}
	if total == 0 {
		t.Fatal("no runnable doc blocks found")
	}
}

// runnableBlocks are the command lines of the ```sh runnable blocks.
func runnableBlocks(doc string) [][]string {
	var out [][]string
	var cur []string
	in := false
	for _, l := range strings.Split(doc, "\n") {
		switch {
		case !in && strings.TrimSpace(l) == "```sh runnable":
			in, cur = true, nil
		case in && strings.TrimSpace(l) == "```":
			in = false
			out = append(out, cur)
		case in:
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				cur = append(cur, l)
			}
		}
	}
	return out
}

// runLine runs one example line: commands joined by &&, a trailing
// comment or parenthesised note dropped, "| ..." dropped (the command's
// own exit counts), "> FILE" written to FILE, "export VAR=VALUE" set.
func runLine(t *testing.T, line string, _ []string) {
	t.Helper()
	if i := strings.Index(line, " #"); i >= 0 {
		line = line[:i]
	}
	if i := strings.Index(line, "   ("); i >= 0 {
		line = line[:i]
	}
	for _, part := range strings.Split(line, "&&") {
		part = strings.TrimSpace(part)
		if i := strings.Index(part, " | "); i >= 0 {
			part = part[:i]
		}
		file := ""
		if i := strings.Index(part, " > "); i >= 0 {
			part, file = strings.TrimSpace(part[:i]), strings.TrimSpace(part[i+3:])
		}
		w := words(part)
		if len(w) == 0 {
			continue
		}
		if w[0] == "export" {
			k, v, _ := strings.Cut(w[1], "=")
			t.Setenv(k, v)
			continue
		}
		if w[0] != "budge" {
			t.Fatalf("%q: not a budge command", part)
		}
		var stdout, stderr bytes.Buffer
		code := cli.Main(context.Background(), w[1:], strings.NewReader(""), &stdout, &stderr)
		if code != 0 {
			t.Errorf("%s: exit %d\n%.2000s\n%.2000s", part, code, stdout.String(), stderr.String())
			continue
		}
		if file != "" {
			if err := os.WriteFile(file, stdout.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func mustRun(t *testing.T, line string) {
	t.Helper()
	runLine(t, line, nil)
	if t.Failed() {
		t.FailNow()
	}
}

// words splits a command line as a shell would, for the quoting the
// examples use ('...' and "...").
func words(s string) []string {
	var out []string
	var cur strings.Builder
	var quote rune
	have := false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, have = r, true
		case r == ' ' || r == '\t' || r == '\\':
			if have || cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(r)
		}
	}
	if have || cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

func clearEnv(t *testing.T) {
	for _, k := range []string{"BUDGE_STORE", "BUDGE_DIR", "BUDGE_CONFIG", "OPENAI_COMPATIBLE_API_KEY"} {
		t.Setenv(k, "")
	}
}

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func waitListening(t *testing.T, addr string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
	}
	t.Fatalf("nothing listens on %s", addr)
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if fi.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, fi.Mode())
	})
	if err != nil {
		t.Fatal(fmt.Errorf("copy the template store: %w", err))
	}
}
