package report_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/buildlab/budge/report"
)

// A judge's audit renders from one document in text and Markdown, and its
// JSON is the audit itself: testdata/judge-flip.json read back writes the
// same bytes, and the text and Markdown its golden files.
func TestJudgeGolden(t *testing.T) {
	in, err := os.ReadFile("testdata/judge-flip.json")
	if err != nil {
		t.Fatal(err)
	}
	var j report.Judge
	if err := json.Unmarshal(in, &j); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"json", "text", "md"} {
		var b bytes.Buffer
		if err := j.Render(&b, format); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "judge-flip."+format, b.Bytes())
	}
	// Further applicable codes are named in every format, the page too.
	j.Applicable = map[string]int{"speaker-authority": 2, "social-framing": 1}
	const line = "further applicable codes named beside the primary one (judgments): social-framing 1, speaker-authority 2"
	for _, format := range []string{"text", "md", "html"} {
		if out := rendered(t, format, j.Render, j.HTML); !strings.Contains(out, line) {
			t.Errorf("%s audit lacks the further codes:\n%s", format, out)
		}
	}
}
