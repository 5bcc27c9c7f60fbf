package dataset

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/buildlab/budge/framing"
)

//go:embed sample/sample.jsonl
var sampleFS embed.FS

// SampleName is the --data value of the built-in sample set.
const SampleName = "sample"

// Sample set: 48 question items in four domains (facts, arithmetic,
// science, social) written for budge, and 6 short naturalistic conflicts.
func SampleItems() []framing.Item {
	b, _ := sampleFS.ReadFile("sample/sample.jsonl")
	items, err := ReadItems("builtin:sample", bytes.NewReader(b))
	if err != nil {
		panic(err) // embedded at build time; a test reads it
	}
	return items
}

// Formats the readers recognise, for messages and the --format flag.
const (
	FormatAuto       = "auto"
	FormatItems      = "budge"      // budge's own item JSONL
	FormatUnified    = "dialdefer"  // DialDefer unified benchmark JSONL
	FormatAIO        = "aio"        // r/AIO experiment JSONL
	FormatTruthfulQA = "truthfulqa" // TruthfulQA CSV, either layout
	FormatBBQ        = "bbq"        // BBQ original JSONL
	FormatMapped     = "mapped"     // any CSV or JSONL with a column mapping
)

// Options tell Open how to read files whose layout it cannot recognise.
type Options struct {
	Format  string   // FormatAuto (default) or one of the formats
	Mapping *Mapping // for FormatMapped
}

// Open reads items from "sample", a file, or a directory (every .jsonl and
// .csv file in it, in name order). The format of each file is recognised
// from its extension and its first record unless Options say otherwise.
// Item ids must be unique across all files.
func Open(path string, o Options) ([]framing.Item, error) {
	if path == SampleName {
		return SampleItems(), nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	files := []string{path}
	if fi.IsDir() {
		files = nil
		ents, err := os.ReadDir(path)
		if err != nil {
			return nil, fmt.Errorf("data: %w", err)
		}
		for _, e := range ents {
			if n := e.Name(); !e.IsDir() && (strings.HasSuffix(n, ".jsonl") || strings.HasSuffix(n, ".csv")) {
				files = append(files, filepath.Join(path, n))
			}
		}
		sort.Strings(files)
		if len(files) == 0 {
			return nil, fmt.Errorf("data: %s holds no .jsonl or .csv files", path)
		}
	}
	var all []framing.Item
	var probs Problems
	where := map[string]string{}
	for _, f := range files {
		items, err := openFile(f, o)
		if err != nil {
			if ps, ok := err.(Problems); ok {
				probs = append(probs, ps...)
				continue
			}
			return nil, err
		}
		for _, it := range items {
			if prev, dup := where[it.ID]; dup {
				probs = append(probs, Problem{File: f, Field: "id", Reason: fmt.Sprintf("id %q is also in %s", it.ID, prev)})
				continue
			}
			where[it.ID] = f
			all = append(all, it)
		}
	}
	if len(probs) > 0 {
		return nil, probs
	}
	if len(all) == 0 {
		return nil, Problems{{File: path, Reason: "no items"}}
	}
	return all, nil
}

func openFile(path string, o Options) ([]framing.Item, error) {
	data, err := readDataFile(path)
	if err != nil {
		return nil, err
	}
	if data, err = decodeText(path, data); err != nil {
		return nil, err
	}
	format := o.Format
	if format == "" || format == FormatAuto {
		if format, err = Detect(path, data); err != nil {
			return nil, err
		}
		if o.Mapping != nil {
			format = FormatMapped
		}
	}
	r := bytes.NewReader(data)
	switch format {
	case FormatItems:
		return ReadItems(path, r)
	case FormatUnified:
		return ReadUnified(path, r)
	case FormatAIO:
		return ReadAIO(path, r)
	case FormatTruthfulQA:
		return ReadTruthfulQA(path, r)
	case FormatBBQ:
		return ReadBBQ(path, r)
	case FormatMapped:
		if o.Mapping == nil {
			return nil, Problems{{File: path, Reason: "format mapped needs a column mapping (--columns question=...,correct=...,incorrect=...)"}}
		}
		if strings.HasSuffix(path, ".csv") {
			return ReadMappedCSV(path, r, *o.Mapping)
		}
		return ReadMappedJSONL(path, r, *o.Mapping)
	}
	return nil, Problems{{File: path, Reason: fmt.Sprintf("unknown format %q", format)}}
}

// Detect names the layout of a file from its extension and first record.
func Detect(path string, data []byte) (string, error) {
	if strings.HasSuffix(path, ".csv") {
		head, _, _ := bytes.Cut(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), []byte("\n"))
		h := string(head)
		if strings.Contains(h, "Question") && strings.Contains(h, "Best Answer") {
			return FormatTruthfulQA, nil
		}
		return FormatMapped, nil
	}
	line, n := firstLine(data)
	if line == nil {
		return "", Problems{{File: path, Reason: "empty file"}}
	}
	if len(line) > MaxLineBytes {
		return "", Problems{{File: path, Line: n, Reason: lineTooLong("the line")}}
	}
	if jsonDepth(line, MaxNestingDepth) > MaxNestingDepth {
		return "", Problems{{File: path, Line: n, Reason: tooDeep("the JSON")}}
	}
	var rec map[string]json.RawMessage
	if err := json.Unmarshal(line, &rec); err != nil {
		return "", Problems{{File: path, Line: n, Reason: jsonError(err)}}
	}
	has := func(keys ...string) bool {
		for _, k := range keys {
			if _, ok := rec[k]; !ok {
				return false
			}
		}
		return true
	}
	switch {
	case has("c1_input", "ground_truth"):
		return FormatAIO, nil
	case has("ans0", "context_condition", "label"):
		return FormatBBQ, nil
	case has("question", "correct_answers", "incorrect_answers"), has("question", "chosen_correct_answer"):
		return FormatUnified, nil
	case has("id", "correct", "incorrect"), has("id", "dialogue"):
		return FormatItems, nil
	}
	return FormatMapped, nil
}

func firstLine(data []byte) ([]byte, int) {
	n := 0
	for len(data) > 0 {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte("\n"))
		n++
		if l := bytes.TrimSpace(line); len(l) > 0 {
			return l, n
		}
	}
	return nil, 0
}
