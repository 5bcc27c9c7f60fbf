package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// A run's batches come back one row at a time in the order of their waves
// (then tokens), a row put again replaces the one stored, one batch is read
// by its token, and an error of the caller's stops the reading.
func testBatches(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	createRun(t, s, "run-a", base)
	createRun(t, s, "run-b", base)
	put := func(run, token string, wave int, state string) {
		t.Helper()
		rec := fmt.Sprintf(`{"token":%q,"state":%q}`, token, state)
		if err := s.PutBatch(ctx, run, BatchRow{Token: token, Wave: wave, State: state, Record: []byte(rec)}); err != nil {
			t.Fatal(err)
		}
	}
	put("run-a", "t2", 2, "submitted")
	put("run-a", "t1", 1, "submitting")
	put("run-a", "t0", 1, "submitted")
	put("run-b", "t9", 1, "submitted")
	put("run-a", "t1", 1, "collected") // replaces
	var got []string
	if err := s.Batches(ctx, "run-a", func(r BatchRow) error {
		got = append(got, fmt.Sprintf("%s/%d/%s/%s", r.Token, r.Wave, r.State, r.Record))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{`t0/1/submitted/{"token":"t0","state":"submitted"}`, `t1/1/collected/{"token":"t1","state":"collected"}`, `t2/2/submitted/{"token":"t2","state":"submitted"}`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("batches of run-a:\n got %q\nwant %q", got, want)
	}
	stop := errors.New("stop")
	calls := 0
	if err := s.Batches(ctx, "run-a", func(BatchRow) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Errorf("reading stopped by the caller: %v after %d rows, want the caller's error after 1", err, calls)
	}
	if r, ok, err := s.Batch(ctx, "run-a", "t1"); err != nil || !ok || r.State != "collected" || r.Wave != 1 || string(r.Record) != `{"token":"t1","state":"collected"}` {
		t.Errorf("batch t1 of run-a: %+v %v %v", r, ok, err)
	}
	if _, ok, err := s.Batch(ctx, "run-a", "t9"); err != nil || ok {
		t.Errorf("batch t9 (run-b's) read from run-a: ok %v, %v", ok, err)
	}
}
