package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// oneJSON decodes stdout as exactly one JSON value, nothing before or
// after it, and returns it.
func oneJSON(t *testing.T, what, out string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: stdout is not JSON: %v\n%.300s", what, err, out)
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		t.Fatalf("%s: stdout has more after the JSON value (%v)", what, err)
	}
	return v
}

// With --format json, standard output is one JSON document and nothing
// else, for run, framing run, report and compare; the "run: <id>" line
// goes to standard error, and the id it names is the one in the JSON.
func TestFormatJSONWritesOnlyJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var ids []string
	for _, model := range []string{"sim", "sim:steadfast"} {
		code, out, errs := budge(t, "run", "--dir", dir, "--quiet", "--seed", "5", "--model", model, "--format", "json")
		if code != ExitOK {
			t.Fatalf("run --model %s: exit %d\n%s", model, code, errs)
		}
		rep := oneJSON(t, "run "+model, out)
		m := runLine.FindStringSubmatch(errs)
		if m == nil {
			t.Fatalf("run --format json: no 'run: <id>' line on stderr:\n%s", errs)
		}
		if got := rep["run"].(map[string]any)["id"]; got != m[1] {
			t.Errorf("the JSON names run %v, stderr names %s", got, m[1])
		}
		ids = append(ids, m[1])
	}
	// The text format keeps the line on stdout, where scripts read it.
	if code, out, _ := budge(t, "report", ids[0], "--dir", dir); code != ExitOK || !bytes.Contains([]byte(out), []byte("baseline correctness")) {
		t.Fatalf("report text: exit %d", code)
	}

	code, out, errs := budge(t, "framing", "run", "--dir", dir, "--quiet", "--resamples", "100", "--format", "json")
	if code != ExitOK {
		t.Fatalf("framing run: exit %d\n%s", code, errs)
	}
	fr := oneJSON(t, "framing run", out)
	if m := runLine.FindStringSubmatch(errs); m == nil || fr["run"].(map[string]any)["id"] != m[1] {
		t.Errorf("framing run --format json: stderr %q does not name the run in the JSON", errs)
	}

	for _, args := range [][]string{
		{"report", ids[0], "--format", "json"},
		{"report", "latest", "--format", "json"},
		{"compare", ids[0], ids[1], "--format", "json"},
	} {
		code, out, errs := budge(t, append(args, "--dir", dir)...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d\n%s", args, code, errs)
		}
		oneJSON(t, strings.Join(args, " "), out)
	}
}
