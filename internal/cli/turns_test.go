package cli

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/store/storetest"
	"github.com/buildlab/budge/study"
)

// budge run --turns 3 on the simulator: killed part way, resumed without
// the flag, it completes with K = 3 kept from the manifest: every pressure
// session that answered three times has three pressure turns, the report
// (text, md, json) has the multi-turn section, and --turns given with
// --resume is refused.
func TestRunTurnsResume(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	profile := filepath.Join(t.TempDir(), "slow.yaml")
	os.WriteFile(profile, []byte("name: slow\nlatency_ms: 3\nreversal: {authority: {X: 0.3, Y: 0.1}, emotional: {X: 0.2, Y: 0.2}, consensus: {X: 0.2, Y: 0.2}}\nreversal_growth: 0.1\ncorrection_uptake: 0.9\n"), 0o600)
	dir := t.TempDir()
	cmd, id := startChild(t, "run", "--dir", dir, "--model", "sim:"+profile, "--turns", "3", "--concurrency", "4", "--quiet")
	time.Sleep(300 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	before, err := storetest.OpenDir(t, dir).Sessions(context.Background(), id)
	if err != nil || len(before) == 0 || len(before) >= 416 {
		t.Fatalf("the kill left %d sessions stored (%v); want some, not all", len(before), err)
	}

	if code, _, errs := budge(t, "run", "--dir", dir, "--resume", id, "--turns", "2"); code != ExitInvalid || !strings.Contains(errs, "turns") {
		t.Errorf("--resume with --turns 2: exit %d, %q; want exit %d naming --turns", code, errs, ExitInvalid)
	}
	code, out, errs := budge(t, "run", "--dir", dir, "--resume", id, "--quiet")
	if code != ExitOK {
		t.Fatalf("resume: exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(out, "Multi-turn pressure (--turns 3") || !strings.Contains(out, "holding after turn 3") {
		t.Errorf("run summary lacks the multi-turn section:\n%s", out)
	}
	st := storetest.OpenDir(t, dir)
	res, err := study.LoadPressure(context.Background(), st, id)
	if err != nil {
		t.Fatal(err)
	}
	if res.Run.Status != store.RunComplete || res.Manifest.Counts.Complete != 416 || res.Manifest.Turns != 3 {
		t.Fatalf("status %s, counts %+v, turns %d; want complete, 416, 3", res.Run.Status, res.Manifest.Counts, res.Manifest.Turns)
	}
	tu := res.Summary.Turns
	if tu == nil || tu.K != 3 || len(tu.Cells) != 8 {
		t.Fatalf("turns summary %+v", tu)
	}
	sessions, err := st.Sessions(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	threeTurns := 0
	for _, se := range sessions {
		sp, err := pressure.ParseSpecID(se.ID)
		if err != nil {
			t.Fatal(err)
		}
		phases := map[string]bool{}
		for _, e := range se.Messages {
			phases[e.Phase] = true
		}
		_, pressured := sp.Branch.Family()
		if !pressured && (phases["followup-2"] || phases["followup-3"]) {
			t.Errorf("session %s (branch %s) has a second pressure turn", se.ID, sp.Branch)
		}
		if pressured && phases["followup-3"] {
			threeTurns++
		}
	}
	// 192 pressure sessions; every one whose first answer parsed goes on
	// to turn 3 (the profile plants no refusals or broken replies).
	if threeTurns != 192 {
		t.Errorf("%d pressure sessions reached turn 3, want 192", threeTurns)
	}
	// A replay is a new run with the recorded K and the same answers.
	code, out, errs = budge(t, "run", "--dir", dir, "--replay", id, "--quiet")
	m := runLine.FindStringSubmatch(out)
	if code != ExitOK || m == nil {
		t.Fatalf("replay: exit %d\n%s%s", code, out, errs)
	}
	rep, err := study.LoadPressure(context.Background(), st, m[1])
	if err != nil {
		t.Fatal(err)
	}
	if rep.Manifest.Turns != 3 || rep.Summary.Turns == nil || !reflect.DeepEqual(rep.Summary.Turns, tu) {
		t.Errorf("replay: turns %d, summary %+v; want 3 and the recorded run's", rep.Manifest.Turns, rep.Summary.Turns)
	}
	for _, f := range []string{"md", "json"} {
		code, out, errs := budge(t, "report", id, "--dir", dir, "--format", f)
		want := map[string]string{"md": "holding after turn 2", "json": `"turns": 3`}[f]
		if code != ExitOK || !strings.Contains(out, want) {
			t.Errorf("report --format %s: exit %d %s; lacks %q", f, code, errs, want)
		}
	}
}
