package stack

import (
	"context"
	"testing"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/runner"
)

// counting answers every request and counts the calls that reach it.
type counting struct {
	info  provider.Info
	calls int
}

func (c *counting) Chat(context.Context, *chat.Request) (*chat.Response, error) {
	c.calls++
	return &chat.Response{Message: chat.Message{Role: chat.Assistant, Content: "ok"}}, nil
}

func (c *counting) Info() provider.Info { return c.info }

func TestBuildLayers(t *testing.T) {
	remote := &counting{info: provider.Info{Name: "openai-compatible", Model: "m"}}
	budget := &runner.Budget{Limit: 1}
	s, err := Build(remote, Options{CacheDir: t.TempDir(), Concurrency: 7, Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	if s.Cache == nil || s.Provider != provider.Provider(s.Cache) {
		t.Fatalf("the cache must wrap the endpoint: %+v", s)
	}
	if s.Adapt == nil || s.Budget != budget {
		t.Fatalf("a remote model gets adaptive concurrency and keeps its budget: %+v", s)
	}
	req := &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.User, Content: "hi"}}}
	for range 3 {
		if _, err := s.Provider.Chat(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if remote.calls != 1 {
		t.Errorf("a repeated request must be answered from the cache: %d calls reached the endpoint", remote.calls)
	}
	if hits, misses := s.Cache.Counts(); hits != 2 || misses != 1 {
		t.Errorf("cache counts %d hits, %d misses; want 2, 1", hits, misses)
	}
	c := s.Config(runner.Config{RunID: "r"})
	if c.Adapt != s.Adapt || c.Budget != budget || c.RunID != "r" {
		t.Errorf("Config must carry the layers: %+v", c)
	}
}

func TestBuildInProcess(t *testing.T) {
	local := &counting{info: provider.Info{Name: "sim", Model: "sim", InProcess: true}}
	s, err := Build(local, Options{Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	if s.Adapt != nil || s.Cache != nil || s.Provider != provider.Provider(local) {
		t.Errorf("a model in process without a cache gets no layers: %+v", s)
	}
}

// An answer is in the run's journal before it is used, so the next try of
// the run (a new stack on the same journal, as after a kill) gets it from
// there and the endpoint is not paid twice.
func TestJournalAnswersAResume(t *testing.T) {
	remote := &counting{info: provider.Info{Name: "openai-compatible", Model: "m"}}
	dir := t.TempDir()
	req := &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.User, Content: "hi"}}}
	first, err := Build(remote, Options{JournalDir: dir, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Provider.Chat(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	again, err := Build(remote, Options{JournalDir: dir, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := again.Provider.Chat(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if hits, _ := again.Journal.Counts(); remote.calls != 1 || hits != 1 {
		t.Errorf("%d calls reached the endpoint, %d journal hits; want 1 and 1", remote.calls, hits)
	}
	local := &counting{info: provider.Info{Name: "sim", Model: "sim", InProcess: true}}
	if s, _ := Build(local, Options{JournalDir: t.TempDir()}); s.Journal != nil {
		t.Errorf("a model in process costs nothing: no journal")
	}
}
