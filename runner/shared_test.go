package runner

import (
	"strings"
	"sync"
	"testing"

	"github.com/buildlab/budge/provider"
)

// TestRunSaysWhenItsFirstCallsFailAlike: a run whose first calls all fail
// the same way says so once, as it happens; a run with one success among
// its first calls, or with different failures, says nothing.
func TestRunSaysWhenItsFirstCallsFailAlike(t *testing.T) {
	refused := &provider.Error{Kind: provider.Auth, Status: 401, Msg: "Incorrect API key provided."}
	other := &provider.Error{Kind: provider.BadRequest, Status: 400, Msg: "bad field"}
	for _, c := range []struct {
		name  string
		errs  func(key string) []error
		wants bool
	}{
		{"every call refused", func(string) []error { return []error{refused} }, true},
		{"one call answered", func(k string) []error {
			if k == "s00/1" {
				return nil
			}
			return []error{refused}
		}, false},
		{"two reasons", func(k string) []error {
			if k == "s01/1" || k == "s03/1" {
				return []error{other}
			}
			return []error{refused}
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var p plan
			jobs := p.jobs(1, 1, 1, 1, 1, 1, 1, 1, 1, 1)
			errs := map[string][]error{}
			for _, j := range jobs {
				errs[j.ID+"/1"] = c.errs(j.ID + "/1")
			}
			f := &fakeProvider{errs: errs}
			var mu sync.Mutex
			var notes []string
			cfg := config(&sleeps{})
			cfg.Concurrency = 1 // the first calls are those of the first sessions
			cfg.Notice = func(s string) { mu.Lock(); notes = append(notes, s); mu.Unlock() }
			run(t, cfg, f, &sink{}, jobs)
			if !c.wants {
				if len(notes) != 0 {
					t.Fatalf("notices %q, want none", notes)
				}
				return
			}
			if len(notes) != 1 || !strings.Contains(notes[0], "first 5 calls all failed the same way") || !strings.Contains(notes[0], "Incorrect API key provided.") {
				t.Fatalf("notices %q, want one naming the shared failure", notes)
			}
		})
	}
}
