package report_test

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/buildlab/budge/report"
)

// reviewFixture is a finished review: kappa with its interval and codes by
// failure type.
func reviewFixture() *report.ReviewSummary {
	k, lo, hi := 0.5, 0.2, 0.8
	return &report.ReviewSummary{Reviewers: []string{"ana", "ben"}, Sample: 3, Finished: []int{3, 3}, Compared: 3, Agreed: 2,
		Kappa: &k, KappaLo: &lo, KappaHi: &hi, KappaInterval: "large-sample standard error", Adjudicated: 1,
		Codes:     []string{"identity", "uncertain", "in review"},
		ByFailure: map[string]map[string]int{"unsupported reversal": {"identity": 2}, "success": {"uncertain": 1}}}
}

// TestReviewInEveryFormat: kappa, its interval and how it was computed, and
// the code distribution by failure type appear in text, md, json and html.
func TestReviewInEveryFormat(t *testing.T) {
	rep := report.Pressure{Version: 1, Review: reviewFixture()}
	for _, format := range []string{"text", "md", "html"} {
		out := rendered(t, format, rep.Render, func(w io.Writer) error { return rep.HTML(w, nil) })
		for _, want := range []string{"Explanation review", "0.500", "0.200, 0.800", "large-sample standard error", "unsupported reversal", "uncertain"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s report lacks %q", format, want)
			}
		}
		if strings.Contains(out, "in review") && format != "html" {
			t.Errorf("%s report shows a code column nobody used", format)
		}
	}
	var b bytes.Buffer
	if err := rep.Render(&b, "json"); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Review struct {
			Kappa, KappaLo, KappaHi *float64
			Interval                string                    `json:"kappa_interval"`
			ByFailure               map[string]map[string]int `json:"codes_by_failure_type"`
		} `json:"review"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	r := got.Review
	if r.Kappa == nil || *r.Kappa != 0.5 || r.Interval == "" || r.ByFailure["unsupported reversal"]["identity"] != 2 {
		t.Errorf("json review: %s", b.String())
	}
	// A run without a review says nothing about one.
	b.Reset()
	if err := (report.Pressure{}).Render(&b, "json"); err != nil || strings.Contains(b.String(), `"review"`) {
		t.Errorf("json without a review: %v\n%s", err, b.String())
	}
}

// TestReviewBeforeBothFinished: until both reviewers have finished the
// report shows no kappa and no codes, only sessions in review.
func TestReviewBeforeBothFinished(t *testing.T) {
	rep := report.Pressure{Review: &report.ReviewSummary{Reviewers: []string{"ana", "ben"}, Sample: 2, Finished: []int{2, 1},
		Codes: []string{"identity", "in review"}, ByFailure: map[string]map[string]int{"success": {"in review": 2}},
		Note: "Agreement is computed when both reviewers have finished."}}
	var b bytes.Buffer
	if err := rep.Render(&b, "text"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	out = out[strings.Index(out, "Explanation review"):]
	if !strings.Contains(out, "computed when both reviewers have finished") || !strings.Contains(out, "coded 2 / 1") || strings.Contains(out, "identity") {
		t.Errorf("text report of an unfinished review:\n%s", out)
	}
}
