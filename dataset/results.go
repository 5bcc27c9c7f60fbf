package dataset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/buildlab/budge/framing"
)

// RecordedAnswer is one condition of one item in a released result file:
// the answer the release parsed, and the conversation it came from when the
// release kept it.
type RecordedAnswer struct {
	Choice    string // the release's parsed answer ("" when it recorded none)
	Reasoning string
	// System, Prompt and Reply are the conversation: the system prompt (if
	// any), the user prompt and the raw assistant reply. HasTranscript is
	// false when the release withheld it.
	System        string
	Prompt        string
	Reply         string
	HasTranscript bool
}

// ResultRecord is one line of a released result file.
type ResultRecord struct {
	Line    int
	Item    framing.Item
	Labels  framing.LabelSet
	Judger  string // naturalistic records: who judges whom
	Judgee  string
	Answers map[framing.Condition]RecordedAnswer
}

// ResultFile is one released per-item result file.
type ResultFile struct {
	Path    string
	Records []ResultRecord
}

// ReadResults reads every *.jsonl result file of a DialDefer results
// folder (one model's outputs): per condition the fields <cond>_ans_t1,
// <cond>_reasoning_t1 and the conversation in <cond>_t1_history (or
// <cond>_history_t1), a Python repr of [{'role': ..., 'content': ...}].
func ReadResults(dir string) ([]ResultFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	var files []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".jsonl") {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("results: %s holds no .jsonl result files", dir)
	}
	var out []ResultFile
	var probs Problems
	for _, f := range files {
		rf, err := readResultFile(f)
		if err != nil {
			if ps, ok := err.(Problems); ok {
				probs = append(probs, ps...)
				continue
			}
			return nil, err
		}
		out = append(out, rf)
	}
	if len(probs) > 0 {
		return nil, probs
	}
	return out, nil
}

func readResultFile(path string) (ResultFile, error) {
	data, err := readDataFile(path)
	if err != nil {
		return ResultFile{}, err
	}
	if data, err = decodeText(path, data); err != nil {
		return ResultFile{}, err
	}
	c := &collector{file: path}
	rf := ResultFile{Path: path}
	var items []framing.Item
	var lines []int
	eachLine(c, bytes.NewReader(data), func(line int, b []byte) {
		var raw map[string]any
		if err := json.Unmarshal(b, &raw); err != nil {
			c.add(line, "", "%s", jsonError(err))
			return
		}
		rec, ok := resultRecord(c, line, b, raw)
		if !ok {
			return
		}
		rf.Records = append(rf.Records, rec)
		items = append(items, rec.Item)
		lines = append(lines, line)
	})
	if _, err := finish(c, items, lines); err != nil {
		return ResultFile{}, err
	}
	return rf, nil
}

func resultRecord(c *collector, line int, b []byte, raw map[string]any) (ResultRecord, bool) {
	rec := ResultRecord{Line: line, Answers: map[framing.Condition]RecordedAnswer{}}
	str := func(k string) string { s, _ := raw[k].(string); return s }
	if _, natural := raw["c1_input"]; natural {
		var ar aioRecord
		if err := json.Unmarshal(b, &ar); err != nil {
			c.add(line, "", "%s", jsonError(err))
			return rec, false
		}
		rec.Item = ar.item(c, line)
		rec.Judger, rec.Judgee = str("judger"), str("judgee")
	} else {
		var ur unifiedRecord
		if err := json.Unmarshal(b, &ur); err != nil {
			c.add(line, "", "%s", jsonError(err))
			return rec, false
		}
		rec.Item = ur.item()
		rec.Labels = framing.LabelSet{Name: "speakers", Speaker1: str("speaker1"), Speaker2: str("speaker2")}
		if rec.Labels.Speaker1 == "" || rec.Labels.Speaker2 == "" {
			c.add(line, "speaker1", "missing speaker labels")
			return rec, false
		}
	}
	for _, cond := range framing.Conditions {
		k := cond.PaperKey()
		a := RecordedAnswer{Reasoning: str(k + "_reasoning_t1")}
		switch v := raw[k+"_ans_t1"].(type) {
		case string:
			a.Choice = strings.TrimSpace(v)
		case float64:
			a.Choice = fmt.Sprint(int(v))
		case nil:
		default:
			c.add(line, k+"_ans_t1", "unexpected value %v", v)
		}
		hist, ok := raw[k+"_t1_history"]
		if !ok {
			hist = raw[k+"_history_t1"]
		}
		if h, isStr := hist.(string); isStr && h != redacted && h != "" {
			v, err := parsePyLiteral(h)
			if err != nil {
				c.add(line, k+"_t1_history", "%v", err)
				continue
			}
			msgs, _ := v.([]any)
			for _, m := range msgs {
				mm, _ := m.(map[string]any)
				role, _ := mm["role"].(string)
				content, _ := mm["content"].(string)
				switch role {
				case "system":
					a.System = content
				case "user":
					if a.Prompt == "" {
						a.Prompt = content
					}
				case "assistant":
					if !a.HasTranscript {
						a.Reply, a.HasTranscript = content, true
					}
				}
			}
			if a.Prompt == "" {
				c.add(line, k+"_t1_history", "the conversation has no user prompt")
			}
		}
		rec.Answers[cond] = a
	}
	return rec, true
}
