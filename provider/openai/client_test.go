package openai

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/testkit/providertest"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.OpenAI, func(baseURL string, timeout time.Duration) (*Provider, error) {
		return New(Config{Name: "openai-compatible", Model: "test-model", BaseURL: baseURL, APIKey: providertest.Key, Tools: true, Timeout: timeout})
	})
}

// Many large answers at once stay within the response budget: the calls
// the budget has no room for wait, and all of them are answered.
func TestResponseBudgetHolds(t *testing.T) {
	const calls, maxBody = 12, 1 << 20
	budget := provider.NewBudget(4 << 20)
	// A body of unknown length reserves the limit and one byte.
	fits := int(budget.Total() / (maxBody + 1))
	answer := providertest.OpenAI.Answer("test-model", strings.Repeat("x", 900<<10), "stop", 1, 1)
	if calls*len(answer) <= int(budget.Total()) || fits >= calls {
		t.Fatalf("the answers must not fit in the budget at once")
	}
	var arrived atomic.Int32
	all := make(chan struct{})
	waited := make(chan bool, calls)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		if arrived.Add(1) == calls {
			close(all)
		}
		select {
		case <-all:
		case <-r.Context().Done():
			return
		}
		// Headers and a first part, without a length, then the rest once
		// every call the budget has no room for is waiting for it. The
		// bound only keeps a broken budget from hanging the test.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		io.WriteString(w, answer[:1000])
		w.(http.Flusher).Flush()
		for i := 0; i < 10000 && budget.Waiting() < calls-fits; i++ {
			time.Sleep(time.Millisecond)
		}
		waited <- budget.Waiting() >= calls-fits
		io.WriteString(w, answer[1000:])
	}))
	defer srv.Close()
	p, err := New(Config{Model: "test-model", BaseURL: srv.URL, Budget: budget, MaxBody: maxBody, MaxConns: calls})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for range calls {
		wg.Go(func() {
			resp, err := p.Chat(context.Background(), providertest.Request())
			if err == nil && len(resp.Raw) != len(answer) {
				t.Errorf("answer of %d bytes, want %d", len(resp.Raw), len(answer))
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	close(waited)
	for err := range errs {
		if err != nil {
			t.Errorf("call: %v", err)
		}
	}
	for ok := range waited {
		if !ok {
			t.Fatalf("the budget never made calls wait (%d waiting)", budget.Waiting())
		}
	}
	if hw := budget.HighWater(); hw > budget.Total() || hw < int64(fits)*(maxBody+1) {
		t.Errorf("high water %d, budget %d", hw, budget.Total())
	}
	if budget.InUse() != 0 {
		t.Errorf("%d bytes still reserved after every call returned", budget.InUse())
	}
}
