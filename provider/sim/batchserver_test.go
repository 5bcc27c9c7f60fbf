package sim_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/buildlab/budge/provider/sim"
)

// openaiBatch uploads n request lines as a batch input file and creates a
// batch of it: the status and body of the create (or of the upload, when
// the upload is refused).
func openaiBatch(t *testing.T, url string, n int) (int, string) {
	t.Helper()
	var file bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&file, `{"custom_id":"r%d","method":"POST","url":"/v1/chat/completions","body":{"model":"sim","messages":[{"role":"user","content":"Is %d even?"}]}}`+"\n", i, i)
	}
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	mw.WriteField("purpose", "batch")
	fw, _ := mw.CreateFormFile("file", "batch.jsonl")
	fw.Write(file.Bytes())
	mw.Close()
	status, body := call(t, "POST", url+"/v1/files", mw.FormDataContentType(), &form)
	if status != 200 {
		return status, body
	}
	var f struct{ ID string }
	if err := json.Unmarshal([]byte(body), &f); err != nil {
		t.Fatal(err)
	}
	return call(t, "POST", url+"/v1/batches", "application/json", strings.NewReader(fmt.Sprintf(`{"input_file_id":%q,"endpoint":"/v1/chat/completions","completion_window":"24h"}`, f.ID)))
}

// anthropicBatch creates a message batch of n requests.
func anthropicBatch(t *testing.T, url string, n int) (int, string) {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"requests":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"custom_id":"r%d","params":{"model":"sim","max_tokens":16,"messages":[{"role":"user","content":"Is %d even?"}]}}`, i, i)
	}
	b.WriteString(`]}`)
	req, _ := http.NewRequest("POST", url+"/v1/messages/batches", strings.NewReader(b.String()))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	return send(t, req)
}

// The simulated batch endpoints refuse what the providers refuse: an
// OpenAI batch of more than 50,000 requests, a message batch of more than
// 100,000, and a batch over its byte limit (413 for a message batch); a
// batch at the limit is taken.
func TestBatchServerRefusesOversizedBatches(t *testing.T) {
	t.Parallel()
	_, url := serve(t, sim.ServerOptions{})
	for _, tc := range []struct {
		name   string
		send   func(*testing.T, string, int) (int, string)
		n      int
		status int
		says   string
	}{
		{"openai at the limit", openaiBatch, 50_000, 200, `"status"`},
		{"openai over the limit", openaiBatch, 50_001, 400, "1 to 50000 requests, got 50001"},
		{"anthropic at the limit", anthropicBatch, 100_000, 200, `"processing_status"`},
		{"anthropic over the limit", anthropicBatch, 100_001, 400, "1 to 100000 requests, got 100001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := tc.send(t, url, tc.n)
			if status != tc.status || !strings.Contains(body, tc.says) {
				t.Errorf("a batch of %d requests: %d %.300s; want %d saying %q", tc.n, status, body, tc.status, tc.says)
			}
		})
	}
	// Bytes: the limits (200 MB and 256 MB) lowered by max-bytes.
	_, small := serve(t, sim.ServerOptions{Batch: sim.BatchOptions{MaxBytes: 5_000}})
	if status, body := openaiBatch(t, small, 100); status != 400 || !strings.Contains(body, "too large") {
		t.Errorf("an OpenAI batch file over max-bytes: %d %.300s; want 400, too large", status, body)
	}
	if status, body := anthropicBatch(t, small, 100); status != 413 || !strings.Contains(body, "request_too_large") {
		t.Errorf("a message batch over max-bytes: %d %.300s; want 413 request_too_large", status, body)
	}
	if status, body := openaiBatch(t, small, 10); status != 200 {
		t.Errorf("an OpenAI batch under max-bytes: %d %.300s; want 200", status, body)
	}
}

// An upload is read as the form gives it, its parts in either order: the
// file is served back byte for byte, and a form without the purpose
// batch, without a file, or that is no multipart form is refused.
func TestBatchServerUploads(t *testing.T) {
	_, url := serve(t, sim.ServerOptions{})
	content := []byte(`{"custom_id":"r1","method":"POST","url":"/v1/chat/completions","body":{"model":"sim","messages":[]}}` + "\n")
	upload := func(parts ...string) (int, string) {
		var form bytes.Buffer
		mw := multipart.NewWriter(&form)
		for _, p := range parts {
			switch p {
			case "file":
				fw, _ := mw.CreateFormFile("file", "batch.jsonl")
				fw.Write(content)
			default:
				mw.WriteField("purpose", p)
			}
		}
		mw.Close()
		return call(t, "POST", url+"/v1/files", mw.FormDataContentType(), &form)
	}
	for _, order := range [][]string{{"batch", "file"}, {"file", "batch"}} {
		status, body := upload(order...)
		var f struct{ ID, Filename string }
		if status != 200 || json.Unmarshal([]byte(body), &f) != nil || f.Filename != "batch.jsonl" {
			t.Fatalf("upload of %v: %d %s", order, status, body)
		}
		if _, got := get(t, url+"/v1/files/"+f.ID+"/content"); got != string(content) {
			t.Errorf("upload of %v served back as %q", order, got)
		}
	}
	for _, tc := range []struct {
		parts []string
		says  string
	}{
		{[]string{"file", "fine-tune"}, `purpose must be batch, got \"fine-tune\"`},
		{[]string{"file"}, `purpose must be batch, got \"\"`},
		{[]string{"batch"}, "no file in the form"},
	} {
		if status, body := upload(tc.parts...); status != 400 || !strings.Contains(body, tc.says) {
			t.Errorf("upload of %v: %d %s; want 400 saying %s", tc.parts, status, body, tc.says)
		}
	}
	if status, body := call(t, "POST", url+"/v1/files", "application/json", strings.NewReader(`{}`)); status != 400 || !strings.Contains(body, "expected a multipart form") {
		t.Errorf("a JSON upload: %d %s", status, body)
	}
}
