package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// framingVerdict is the part of a framing JSON report these tests read.
type framingVerdict struct {
	Measurability struct {
		Verdict    string `json:"verdict"`
		Conditions []struct {
			Condition   string   `json:"condition"`
			Sessions    int      `json:"sessions"`
			Answered    int      `json:"answered"`
			Refused     int      `json:"refused"`
			Unparseable int      `json:"unparseable"`
			Share       *float64 `json:"answered_share"`
		} `json:"by_condition"`
		Unmeasurable []string `json:"unmeasurable_cells"`
	} `json:"measurability"`
}

func framingJSONReport(t *testing.T, dir string) framingVerdict {
	t.Helper()
	code, out, errs := budge(t, "framing", "report", "latest", "--dir", dir, "--format", "json")
	if code != ExitOK {
		t.Fatalf("report exit %d: %s", code, errs)
	}
	var v framingVerdict
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// A judge that refuses every request is not a neutral judge: the run says
// "not measurable" with the counts, first, and exits with the invalid-result
// code.
func TestFramingRefusingJudgeNotMeasurable(t *testing.T) {
	t.Parallel()
	hs := scriptedJudge(t, text("I cannot judge this conversation."))
	defer hs.Close()
	dir := t.TempDir()
	code, out, errs := budge(t, "framing", "run", "--dir", dir, "--model", "openai-compatible:judge", "--base-url", hs.URL+"/v1",
		"--concurrency", "8", "--max-attempts", "1", "--quiet", "--resamples", "100")
	if code != ExitUnmeasured {
		t.Fatalf("exit %d, want %d\n%s", code, ExitUnmeasured, errs)
	}
	if !strings.Contains(errs, "not measurable") {
		t.Errorf("stderr does not say not measurable: %s", errs)
	}
	first := strings.Index(out, "verdict: not measurable")
	if first < 0 || first > strings.Index(out, "data ") || !strings.Contains(out, "Answers by condition") {
		t.Errorf("the text report does not lead with the verdict and the counts:\n%s", out)
	}
	if strings.Contains(out, "no clear shift") {
		t.Errorf("a judge that refused everything reads \"no clear shift\":\n%s", out)
	}
	v := framingJSONReport(t, dir)
	if v.Measurability.Verdict != "not measurable" || len(v.Measurability.Conditions) != 4 {
		t.Fatalf("json measurability %+v", v.Measurability)
	}
	for _, c := range v.Measurability.Conditions {
		if c.Sessions == 0 || c.Refused != c.Sessions || c.Answered != 0 {
			t.Errorf("%s: %+v, want every session refused", c.Condition, c)
		}
	}
	for _, format := range []string{"md", "html"} {
		_, out, _ := budge(t, "framing", "report", "latest", "--dir", dir, "--format", format)
		if !strings.Contains(out, "not measurable") || !strings.Contains(out, "Answers by condition") {
			t.Errorf("%s report does not show the verdict and the counts", format)
		}
	}
}

// A judge that answers half the items unparseably: the report shows the
// share answered per condition and per cell.
func TestFramingHalfUnparseableShowsShare(t *testing.T) {
	t.Parallel()
	var lines []string
	for i := range 20 {
		lines = append(lines, fmt.Sprintf(`{"id": "q%d", "domain": "d", "question": "Question number %d: is it so?", "correct": "yes %d", "incorrect": "no %d"}`, i, i+100, i, i))
	}
	data := filepath.Join(t.TempDir(), "items.jsonl")
	if err := os.WriteFile(data, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Odd-numbered questions get prose without a choice in every condition.
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		content := judgeJSON("1")
		for i := 101; i < 120; i += 2 {
			if strings.Contains(string(body), fmt.Sprintf("Question number %d:", i)) {
				content = "It is hard to say; both readings have merit."
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "cmpl", "object": "chat.completion", "created": 1, "model": "judge",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	}))
	defer hs.Close()
	dir := t.TempDir()
	code, out, errs := budge(t, "framing", "run", "--dir", dir, "--data", data, "--model", "openai-compatible:judge", "--base-url", hs.URL+"/v1",
		"--concurrency", "8", "--max-attempts", "1", "--quiet", "--resamples", "100")
	if code != ExitOK {
		t.Fatalf("exit %d (half the items answered is at the threshold, measurable)\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "50.0%") {
		t.Errorf("the text report does not show the 50%% share:\n%s", out)
	}
	v := framingJSONReport(t, dir)
	if v.Measurability.Verdict != "measurable" {
		t.Errorf("verdict %q", v.Measurability.Verdict)
	}
	for _, c := range v.Measurability.Conditions {
		if c.Share == nil || *c.Share != 0.5 || c.Unparseable != c.Sessions/2 {
			t.Errorf("%s: %+v, want half answered, half unparseable", c.Condition, c)
		}
	}
}
