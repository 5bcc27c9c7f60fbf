package cli

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// budge export --format csv has the JSONL export's fields as its header
// and one row per session, each cell the JSONL record's value, for a
// pressure and a framing run.
func TestExportCSVMatchesJSONL(t *testing.T) {
	dir := t.TempDir()
	for _, run := range [][]string{
		{"run", "--quiet", "--seed", "3"},
		{"framing", "run", "--quiet", "--resamples", "50"},
	} {
		code, out, errs := budge(t, append(run, "--dir", dir)...)
		m := runLine.FindStringSubmatch(out)
		if code != ExitOK || m == nil {
			t.Fatalf("%v: exit %d\n%s", run, code, errs)
		}
		id := m[1]
		code, jl, errs := budge(t, "export", id, "--dir", dir)
		if code != ExitOK {
			t.Fatalf("export jsonl: exit %d %s", code, errs)
		}
		code, cs, errs := budge(t, "export", id, "--dir", dir, "--format", "csv")
		if code != ExitOK {
			t.Fatalf("export csv: exit %d %s", code, errs)
		}
		file := filepath.Join(t.TempDir(), "sessions.csv")
		if code, _, errs := budge(t, "export", id, "--dir", dir, "--format", "csv", "-o", file); code != ExitOK {
			t.Fatalf("export csv -o: exit %d %s", code, errs)
		}
		if b, err := os.ReadFile(file); err != nil || string(b) != cs {
			t.Errorf("export csv -o wrote %d bytes (%v), stdout had %d", len(b), err, len(cs))
		}
		rows, err := csv.NewReader(strings.NewReader(cs)).ReadAll()
		if err != nil {
			t.Fatalf("%s: the CSV does not parse: %v", id, err)
		}
		var recs []map[string]any
		var keys []string
		sc := bufio.NewScanner(strings.NewReader(jl))
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var r map[string]any
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			if keys == nil {
				keys = jsonKeys(t, sc.Bytes())
			}
			recs = append(recs, r)
		}
		planned := len(recs)
		if len(rows) != planned+1 {
			t.Fatalf("%v: %d CSV rows, want a header and %d sessions", run, len(rows), planned)
		}
		if planned < 100 {
			t.Fatalf("%v: only %d sessions exported", run, planned)
		}
		// Every JSONL field is a column (fields omitted when empty
		// included), in the JSONL order.
		col := map[string]int{}
		for i, h := range rows[0] {
			col[h] = i
		}
		for _, k := range keys {
			if _, ok := col[k]; !ok {
				t.Errorf("%v: the CSV has no column %q", run, k)
			}
		}
		for i, r := range recs {
			for k, v := range r {
				if got, want := rows[i+1][col[k]], cellOf(v); got != want {
					t.Fatalf("%v: row %d column %s = %q, the JSONL has %q", run, i+1, k, got, want)
				}
			}
		}
	}
}

// jsonKeys are an object's keys in their order.
func jsonKeys(t *testing.T, line []byte) []string {
	dec := json.NewDecoder(strings.NewReader(string(line)))
	dec.Token()
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// cellOf is what a CSV cell shows of a JSON value.
func cellOf(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		if v != "" && strings.ContainsRune("=+-@\t\r", rune(v[0])) {
			return "'" + v
		}
		return v
	case float64, bool:
		return fmt.Sprint(v)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
