package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/buildlab/budge/chat"
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
	api := batchAPIAt(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/batches/batch_1"):
			fmt.Fprint(w, `{"id":"batch_1","object":"batch","endpoint":"/v1/chat/completions","status":"completed","output_file_id":"file_out","created_at":1,"completion_window":"24h","input_file_id":"in"}`)
		case strings.HasSuffix(r.URL.Path, "/files/file_out/content"):
			fmt.Fprint(w, file)
		default:
			http.NotFound(w, r)
		}
	})
	var got []string
	err := api.Results(context.Background(), "batch_1", func(r batch.Result) error {
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

// A batch input line is what json.Encoder writes of the line's object,
// byte for byte: the body as Body wrote it, with <, >, & and U+2028/9 in
// its strings escaped, and the custom_id quoted.
func TestBatchLineAsEncoder(t *testing.T) {
	type batchLine struct {
		CustomID string          `json:"custom_id"`
		Method   string          `json:"method"`
		URL      string          `json:"url"`
		Body     json.RawMessage `json:"body"`
	}
	temp := 0.5
	for _, content := range []string{"plain", "a <b> & c", "line\u2028sep\u2029", `quote " and \ back`, "é 中"} {
		body, err := Body(&chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.User, Content: content}},
			Settings: chat.Settings{Temperature: &temp}}, Format{})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"r1-2", "id<&>\"x"} {
			var want bytes.Buffer
			if err := json.NewEncoder(&want).Encode(batchLine{CustomID: id, Method: "POST", URL: "/v1/chat/completions", Body: body}); err != nil {
				t.Fatal(err)
			}
			if got := appendBatchLine(nil, id, body); !bytes.Equal(got, want.Bytes()) {
				t.Errorf("line of %q, %q:\n got %s\nwant %s", id, content, got, want.Bytes())
			}
		}
	}
}

// reqList is a batch's requests held in memory.
type reqList []batch.Request

func (l reqList) Len() int { return len(l) }
func (l reqList) Each(fn func(batch.Request) error) error {
	for _, r := range l {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// A batch's input file is uploaded with its length, not chunked: the
// endpoint can read it into one buffer.
func TestBatchUploadHasLength(t *testing.T) {
	var length, read int64 = -2, -2
	var chunked []string
	api := batchAPIAt(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/files"):
			length, chunked = r.ContentLength, r.TransferEncoding
			n, _ := io.Copy(io.Discard, r.Body)
			read = n
			fmt.Fprint(w, `{"id":"file_in","object":"file","bytes":1,"created_at":1,"filename":"x.jsonl","purpose":"batch","status":"processed"}`)
		case strings.HasSuffix(r.URL.Path, "/batches"):
			fmt.Fprint(w, `{"id":"batch_1","object":"batch","endpoint":"/v1/chat/completions","status":"validating","created_at":1,"completion_window":"24h","input_file_id":"file_in"}`)
		default:
			http.NotFound(w, r)
		}
	})
	reqs := reqList{{CustomID: "r1", Body: []byte(`{"model":"m","messages":[]}`)}, {CustomID: "r2", Body: []byte(`{"model":"m","messages":[{"role":"user","content":"<x>"}]}`)}}
	id, err := api.Submit(context.Background(), "budge-tok", reqs)
	if err != nil || id != "batch_1" {
		t.Fatalf("submit: %q, %v", id, err)
	}
	if length <= 0 || length != read || len(chunked) > 0 {
		t.Errorf("upload sent with length %d, %d bytes read, transfer encoding %q", length, read, chunked)
	}
}

// batchAPIAt is the OpenAI batch API of a provider whose endpoint is
// handler.
func batchAPIAt(t *testing.T, handler http.HandlerFunc) batch.API {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	p, err := New(Config{Name: "openai", Model: "m", BaseURL: srv.URL, APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	return p.BatchAPI()
}
