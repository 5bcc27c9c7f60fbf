package cli

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buildlab/budge/pressure"
)

// TestHugeToolArgumentsEndTheirSessions: an endpoint that answers every
// turn of one case with a tool call carrying about 7 MiB of arguments (just
// under the response limit, and incompressible) ends those sessions with
// kind session_too_large, within bounded memory and disk; the sessions of
// the other cases are answered as usual.
func TestHugeToolArgumentsEndTheirSessions(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("moves a few hundred megabytes")
	}
	deckPath, d := awkwardDeck(t)
	hostileP, hostileQ := d.Cases[0].ProfileIDs()
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/"
	big := make([]byte, 7<<20)
	for i := range big {
		big[i] = alphabet[rng.IntN(len(alphabet))]
	}
	args, _ := json.Marshal(map[string]string{"note": string(big)})
	// The hostile answer, encoded once (the server's own memory stays
	// small): a tool call whose arguments are args.
	huge, _ := json.Marshal(map[string]any{"id": "cmpl-huge", "object": "chat.completion", "created": 1, "model": "huge",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls", "message": map[string]any{"role": "assistant", "content": nil,
			"tool_calls": []any{map[string]any{"id": "call_huge", "type": "function",
				"function": map[string]any{"name": pressure.ToolAvailability, "arguments": string(args)}}}}}},
		"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	big, args = nil, nil
	var calls, hugeCalls atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		conv, err := conversation(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(conv, hostileP) && strings.Contains(conv, hostileQ) {
			hugeCalls.Add(1)
			w.Write(huge)
			return
		}
		id, _ := meantID(d, conv)
		json.NewEncoder(w).Encode(map[string]any{"id": fmt.Sprintf("cmpl-%d", n), "object": "chat.completion", "created": 1, "model": "huge",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": answerJSON(id)}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	}))
	defer hs.Close()

	// The memory the process takes from the system, sampled while the run
	// goes (test and server included).
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if used := ms.Sys - ms.HeapReleased; used > peak.Load() {
				peak.Store(used)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	dir := t.TempDir()
	start := time.Now()
	code, out, errs := budge(t, "run", "--dir", dir, "--deck", deckPath, "--model", "openai-compatible:huge", "--base-url", hs.URL+"/v1",
		"--channel", "tool", "--concurrency", "8", "--max-attempts", "1", "--quiet")
	close(stop)
	<-sampled
	elapsed := time.Since(start)
	// The hostile case's sessions failed: the run is incomplete.
	if code != ExitIncomplete {
		t.Fatalf("run exit %d, want %d\n%s\n%s", code, ExitIncomplete, out, errs)
	}
	var disk int64
	filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			if fi, err := e.Info(); err == nil {
				disk += fi.Size()
			}
		}
		return nil
	})
	t.Logf("%d calls (%d answered with 7 MiB of tool arguments) in %v; peak memory %d MB, store %d MB",
		calls.Load(), hugeCalls.Load(), elapsed.Round(time.Millisecond), peak.Load()>>20, disk>>20)
	if p := peak.Load(); p >= 300<<20 {
		t.Errorf("peak memory %d MB, want under 300 MB", p>>20)
	}
	if disk >= 200<<20 {
		t.Errorf("store %d MB, want under 200 MB", disk>>20)
	}

	code, out, errs = budge(t, "export", "latest", "--dir", dir)
	if code != ExitOK {
		t.Fatalf("export exit %d: %s", code, errs)
	}
	hostile, others := 0, 0
	for _, r := range readExport(t, out) {
		if r.CaseID == d.Cases[0].ID {
			if hostile == 0 {
				t.Logf("%s: %v", r.InitialStatus, deref(r.InitialProb))
			}
			hostile++
			if !strings.HasPrefix(fmt.Sprint(deref(r.InitialProb)), "session_too_large: ") {
				t.Errorf("%s/%s/%s: initial %s (%v), want failed with session_too_large", r.CaseID, r.Assignment, r.Branch, r.InitialStatus, deref(r.InitialProb))
			}
			continue
		}
		others++
		if r.InitialStatus != "correct" {
			t.Errorf("%s/%s/%s: initial %s (%v), want correct", r.CaseID, r.Assignment, r.Branch, r.InitialStatus, deref(r.InitialProb))
		}
	}
	if hostile == 0 || others == 0 {
		t.Fatalf("%d sessions of the hostile case, %d of the others", hostile, others)
	}
}
