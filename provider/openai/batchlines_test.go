package openai

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/buildlab/budge/limits"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/batch"
)

// A results line over limits.MaxBatchResultLine is its request's failure
// (response_too_large), and the lines after it are read as usual.
func TestBatchResultLineOverLimit(t *testing.T) {
	ok := func(id string) string {
		return `{"id":"b-` + id + `","custom_id":"` + id + `","response":{"status_code":200,"request_id":"r","body":` +
			`{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],` +
			`"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}},"error":null}`
	}
	big := `{"id":"b-big","custom_id":"big","response":{"status_code":200,"body":{"pad":"` + strings.Repeat("x", limits.MaxBatchResultLine) + `"}}}`
	file := ok("a") + "\n" + big + "\n" + ok("b") + "\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/batches/batch_1"):
			fmt.Fprint(w, `{"id":"batch_1","object":"batch","endpoint":"/v1/chat/completions","status":"completed","output_file_id":"file_out","created_at":1,"completion_window":"24h","input_file_id":"in"}`)
		case strings.HasSuffix(r.URL.Path, "/files/file_out/content"):
			fmt.Fprint(w, file)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	p, err := New(Config{Name: "openai", Model: "m", BaseURL: srv.URL, APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	err = p.BatchAPI().Results(context.Background(), "batch_1", func(r batch.Result) error {
		switch {
		case r.Err != nil && r.Err.Kind == provider.ResponseTooLarge:
			got = append(got, r.CustomID+":too large")
		case r.Err != nil:
			got = append(got, r.CustomID+":"+r.Err.Error())
		default:
			got = append(got, r.CustomID+":"+r.Response.Message.Content)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "a:hi big:too large b:hi" {
		t.Errorf("results %q", got)
	}
}
