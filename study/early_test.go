package study

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/testkit/storetest"
)

// A fresh run is scored as its sessions are stored; its result is the one
// scoring the stored sessions gives, byte for byte (manifest and summary),
// in both channels the simulator answers in (tool calls and messages).
func TestEarlyScoringIsScoringFromTheStore(t *testing.T) {
	for _, channel := range []string{"tool", "message"} {
		t.Run(channel, func(t *testing.T) {
			st := storetest.Open(t)
			o := DefaultPressureOptions()
			o.Seed, o.Concurrency, o.Channel = 3, 16, channel
			before := earlyRuns.Load()
			got, err := As[*PressureResult](Start(context.Background(), st, o))
			if err != nil {
				t.Fatal(err)
			}
			if earlyRuns.Load() != before+1 {
				t.Fatal("the fresh run was not scored as it was stored")
			}
			want, err := As[*PressureResult](Load(context.Background(), st, got.Run.ID))
			if err != nil {
				t.Fatal(err)
			}
			if got.Manifest.Counts.Complete == 0 {
				t.Fatalf("no session completed: %+v", got.Manifest.Counts)
			}
			for _, part := range []struct {
				name      string
				got, want any
			}{{"manifest", got.Manifest, want.Manifest}, {"summary", got.Summary, want.Summary}} {
				g, _ := json.Marshal(part.got)
				w, _ := json.Marshal(part.want)
				if string(g) != string(w) {
					t.Errorf("%s scored as stored:\n%s\nscored from the store:\n%s", part.name, g, w)
				}
			}
		})
	}
}

// What early scores of a message is what the store reads back: tool call
// arguments as their JSON column keeps them.
func TestStoredMessagesAreWhatTheStoreReadsBack(t *testing.T) {
	st := storetest.Open(t)
	ctx := context.Background()
	if err := st.CreateRun(ctx, store.Run{ID: "r1", Protocol: "pressure", Status: store.RunRunning, Created: time.Now(), Manifest: json.RawMessage(`{}`)}, "deck.yaml", []byte("cases: []")); err != nil {
		t.Fatal(err)
	}
	msgs := []chat.Entry{
		{Phase: "initial", Message: chat.Message{Role: chat.User, Content: "q"}},
		{Phase: "initial", Message: chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "c1", Name: "lookup", Arguments: json.RawMessage("{ \"id\" :\n \"AV-1\" }")}}}},
		{Phase: "initial", Message: chat.Message{Role: chat.ToolRole, ToolCallID: "c1", Name: "lookup", Content: "{ \"a\": 1 }"}},
	}
	se := store.Session{ID: "s1", Seq: 0, Spec: json.RawMessage(`{}`), Status: store.SessionComplete, Started: time.Now(), Finished: time.Now(),
		Incarnation: 1, Attempts: []store.Attempt{}, Messages: msgs}
	if err := st.WriteSessions(ctx, "r1", []store.Session{se}); err != nil {
		t.Fatal(err)
	}
	var back []chat.Entry
	if err := st.EachSessions(ctx, "r1", 8, func(b []store.Session) error {
		back = b[0].Messages
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got := storedMessages(msgs)
	if !reflect.DeepEqual(got, back) {
		t.Errorf("storedMessages = %+v\nthe store reads back %+v", got, back)
	}
	if string(msgs[1].ToolCalls[0].Arguments) != "{ \"id\" :\n \"AV-1\" }" {
		t.Errorf("storedMessages changed the session's own messages: %s", msgs[1].ToolCalls[0].Arguments)
	}
}
