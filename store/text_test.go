package store

import (
	"context"
	"testing"
)

// Text from outside budge is stored as it came, NUL characters included
// (PostgreSQL's TEXT refuses them; a model may produce one).
func testTextFromOutsideRoundTrips(t *testing.T) {
	se := testSession("s1", 0)
	se.Messages[0].Content = "a\x00b ünïcode"
	se.Messages[1].Refusal = "no\x00"
	se.FailureMsg, se.Stop = "x\x00y", "stop\x00"
	se.Attempts[0].ErrorMsg = "provider said \x00"
	s := storeWithRun(t, se)
	got, err := s.Session(context.Background(), "run", "s1")
	if err != nil {
		t.Fatal(err)
	}
	sameSession(t, got, se)
}
