package provider

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

func TestBudget(t *testing.T) {
	b := NewBudget(2 << 20)
	got, err := b.Acquire(context.Background(), 1<<20)
	if err != nil || got != 1<<20 || b.InUse() != 1<<20 {
		t.Fatalf("acquire: %d %v, in use %d", got, err, b.InUse())
	}
	// More than the whole budget is clamped to it, and must wait.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Acquire(ctx, 10<<20); err == nil {
		t.Errorf("an acquisition that cannot be met must wait, and fail with its context")
	}
	b.Release(got)
	if got, err := b.Acquire(context.Background(), 10<<20); err != nil || got != 2<<20 {
		t.Errorf("clamped acquire: %d %v", got, err)
	} else {
		b.Release(got)
	}
	if b.InUse() != 0 || b.HighWater() != 2<<20 || b.Waiting() != 0 {
		t.Errorf("in use %d, high water %d, waiting %d", b.InUse(), b.HighWater(), b.Waiting())
	}
}

// exchange makes one request to srv through an Exchange's middleware.
func exchange(t *testing.T, srv *httptest.Server, x *Exchange) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("{}"))
	res, err := x.Middleware(req, srv.Client().Do)
	if err == nil {
		res.Body.Close()
	}
}

func bigBody(status, n int, declared bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if declared {
			w.Header().Set("Content-Length", strconv.Itoa(n))
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		chunk := []byte(strings.Repeat("a", 64<<10))
		for sent := 0; sent < n; sent += len(chunk) {
			if _, err := w.Write(chunk[:min(len(chunk), n-sent)]); err != nil {
				return
			}
		}
	}
}

func TestExchangeTooLarge(t *testing.T) {
	for _, declared := range []bool{true, false} {
		t.Run("declared length "+strconv.FormatBool(declared), func(t *testing.T) {
			srv := httptest.NewServer(bigBody(200, 30<<20, declared))
			defer srv.Close()
			b := NewBudget(64 << 20)
			x := &Exchange{MaxBody: 1 << 20, Budget: b}
			exchange(t, srv, x)
			var tl *TooLargeError
			if !errors.As(x.ReadErr, &tl) || x.Body != nil {
				t.Fatalf("read error %v, %d bytes kept", x.ReadErr, len(x.Body))
			}
			e := x.Failure(context.Background(), nil, func([]byte) (string, string) { return "", "" })
			if e.Kind != ResponseTooLarge || e.Kind.Infrastructure() || e.Status != 200 || !strings.Contains(e.Msg, "1.0 MiB limit") {
				t.Errorf("failure %v (retried: %v)", e, e.Kind.Infrastructure())
			}
			// Never more than the limit (and the byte that tells) read.
			if b.HighWater() > 1<<20+1 || b.InUse() != 0 {
				t.Errorf("high water %d, in use %d", b.HighWater(), b.InUse())
			}
			if declared && b.HighWater() != 0 {
				t.Errorf("a declared oversized body is refused unread, high water %d", b.HighWater())
			}
		})
	}
}

func TestExchangeErrorBodyCut(t *testing.T) {
	srv := httptest.NewServer(bigBody(502, 5<<20, false))
	defer srv.Close()
	b := NewBudget(64 << 20)
	x := &Exchange{Budget: b}
	exchange(t, srv, x)
	if x.ReadErr != nil || len(x.Body) != MaxErrorBody {
		t.Fatalf("read error %v, %d bytes kept", x.ReadErr, len(x.Body))
	}
	e := x.Failure(context.Background(), nil, func([]byte) (string, string) { return "", "" })
	if e.Kind != Transient || e.Status != 502 {
		t.Errorf("a long error page is classified by its status: %v", e)
	}
	x.Release()
	if b.InUse() != 0 || b.HighWater() > MaxErrorBody {
		t.Errorf("in use %d, high water %d", b.InUse(), b.HighWater())
	}
}

func TestExchangeHoldsUntilRelease(t *testing.T) {
	const n = 100 << 10
	for _, declared := range []bool{true, false} {
		srv := httptest.NewServer(bigBody(200, n, declared))
		b := NewBudget(8 << 20)
		x := &Exchange{MaxBody: 1 << 20, Budget: b}
		exchange(t, srv, x)
		srv.Close()
		if x.ReadErr != nil || len(x.Body) != n {
			t.Fatalf("declared %v: %v, %d bytes", declared, x.ReadErr, len(x.Body))
		}
		// What the body did not use is given back at once; the body's
		// own bytes when the call is done.
		if b.InUse() != int64(cap(x.Body)) || b.InUse() > 2*n {
			t.Errorf("declared %v: in use %d for a body of %d (capacity %d)", declared, b.InUse(), n, cap(x.Body))
		}
		x.Release()
		x.Release()
		if b.InUse() != 0 {
			t.Errorf("declared %v: in use %d after release", declared, b.InUse())
		}
	}
}
