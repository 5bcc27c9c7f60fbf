package sim

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/buildlab/budge/internal/jsontext"
)

// BatchOptions set how the server's batch endpoints behave: OpenAI's Batch
// API (files, batches, output and error files) and Anthropic's Message
// Batches.
type BatchOptions struct {
	// Delay is how long a batch stays in progress after it is created.
	Delay time.Duration `json:"delay"`
	// ErrorRate is the share of a batch's requests that fail inside it
	// (a 500 in the request's result), drawn per request.
	ErrorRate float64 `json:"error_rate"`
	// Expire lists batches, by the order they are created (1 is the first),
	// that expire instead of completing: their first half of requests is
	// answered, the rest ends as expired.
	Expire []int `json:"expire,omitempty"`
	// FailDownloads fails the first so many downloads of each results file
	// (a 503); CutDownloads cuts the next so many off after half their
	// bytes, the connection closed.
	FailDownloads int `json:"fail_downloads,omitempty"`
	CutDownloads  int `json:"cut_downloads,omitempty"`
	// LoseCreate lists creates, by order (1 is the first), whose batch is
	// made but whose answer is lost: the connection closes.
	LoseCreate []int `json:"lose_create,omitempty"`
	// Fail lists OpenAI batches, by order, that fail as a whole with
	// FailCode (token_limit_exceeded when empty) in errors.data.
	Fail     []int  `json:"fail,omitempty"`
	FailCode string `json:"fail_code,omitempty"`
	// MaxBytes refuses a batch input over so many bytes (an OpenAI upload
	// with a 400, a message batch with a 413), as the providers do at
	// 200 MB and 256 MB.
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// Hold lists batches, by order, that stay in progress until they are
	// cancelled, whatever Delay says.
	Hold []int `json:"hold,omitempty"`
	// CancelDone is the share of a batch's requests answered before a
	// cancel ends it.
	CancelDone float64 `json:"cancel_done,omitempty"`
	// MoveResults serves message batch results only at their results_url,
	// a path other than the documented one.
	MoveResults bool `json:"move_results,omitempty"`
}

// BatchFaultsHelp describes the spec SetFaults reads (budge sim serve
// --batch-faults).
const BatchFaultsHelp = `faults planted at the batch endpoints, comma-separated: ` +
	`fail-downloads=N (each results download fails N times with a 503), cut-downloads=N (then N are cut off half way), ` +
	`lose-create=I+J (the Ith and Jth batch creates are made but their answer is lost), fail=I+J (those OpenAI batches fail as a whole, errors.data), ` +
	`fail-code=CODE (their code; token_limit_exceeded), max-bytes=N (refuse batch input over N bytes), ` +
	`hold=I+J (those batches stay in progress until cancelled), cancel-done=F (the share of a batch answered before a cancel ends it), move-results (message batch results only at their results_url); ` +
	`expire with --batch-expire`

// SetFaults reads a fault spec (BatchFaultsHelp) into o.
func (o *BatchOptions) SetFaults(spec string) error {
	for _, f := range strings.Split(spec, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		name, val, hasVal := strings.Cut(f, "=")
		bad := func(err error) error {
			return fmt.Errorf("batch fault %q: %v (%s)", f, err, BatchFaultsHelp)
		}
		need := func() error {
			if !hasVal || val == "" {
				return bad(fmt.Errorf("%s needs a value", name))
			}
			return nil
		}
		var err error
		switch name {
		case "fail-downloads", "cut-downloads":
			if err = need(); err == nil {
				var n int
				if n, err = strconv.Atoi(val); err == nil && n < 0 {
					err = fmt.Errorf("must not be negative")
				}
				if name == "fail-downloads" {
					o.FailDownloads = n
				} else {
					o.CutDownloads = n
				}
			}
		case "lose-create", "fail", "hold":
			if err = need(); err == nil {
				var list []int
				for _, v := range strings.Split(val, "+") {
					n, perr := strconv.Atoi(v)
					if perr != nil || n < 1 {
						err = fmt.Errorf("batches are counted from 1, got %q", v)
						break
					}
					list = append(list, n)
				}
				switch name {
				case "fail":
					o.Fail = append(o.Fail, list...)
				case "hold":
					o.Hold = append(o.Hold, list...)
				default:
					o.LoseCreate = append(o.LoseCreate, list...)
				}
			}
		case "fail-code":
			if err = need(); err == nil {
				o.FailCode = val
			}
		case "max-bytes":
			if err = need(); err == nil {
				if o.MaxBytes, err = strconv.ParseInt(val, 10, 64); err == nil && o.MaxBytes < 1 {
					err = fmt.Errorf("must be positive")
				}
			}
		case "cancel-done":
			if err = need(); err == nil {
				if o.CancelDone, err = strconv.ParseFloat(val, 64); err == nil && (o.CancelDone < 0 || o.CancelDone > 1) {
					err = fmt.Errorf("must be in [0, 1]")
				}
			}
		case "move-results":
			if hasVal {
				err = fmt.Errorf("takes no value")
			}
			o.MoveResults = true
		default:
			err = fmt.Errorf("unknown fault")
		}
		if err != nil {
			if strings.HasPrefix(err.Error(), "batch fault") {
				return err
			}
			return bad(err)
		}
	}
	return nil
}

// Validate reports every problem.
func (o BatchOptions) Validate() []error {
	var errs []error
	if o.Delay < 0 {
		errs = append(errs, fmt.Errorf("batch delay must not be negative"))
	}
	if o.ErrorRate < 0 || o.ErrorRate > 1 {
		errs = append(errs, fmt.Errorf("batch error rate must be in [0, 1], got %v", o.ErrorRate))
	}
	for _, n := range o.Expire {
		if n < 1 {
			errs = append(errs, fmt.Errorf("batches to expire are counted from 1, got %d", n))
		}
	}
	return errs
}

// batches is the server's batch state, in memory.
type batches struct {
	mu      sync.Mutex
	files   map[string][]byte
	batches map[string]*simBatch
	order   []string
	n       int
	rng     *rand.Rand
	// downloads counts each results file's downloads; deleted the files
	// and message batches deleted.
	downloads map[string]int
	deleted   int
}

// simBatch is one batch of either style.
type simBatch struct {
	mu        sync.Mutex
	style     string // openai, anthropic
	id        string
	nth       int
	created   time.Time
	endpoint  string
	input     string         // input file (openai)
	lines     []batchRequest // the requests, until the batch ends
	total     int            // how many
	metadata  map[string]string
	status    string
	ended     time.Time
	output    string // file ids (openai)
	errors    string
	results   []byte // anthropic results, JSONL
	failCode  string
	gone      bool // a deleted message batch
	completed int
	failed    int
	expired   int
	cancelled int
}

func (s *Server) batchRoutes(mux *http.ServeMux) {
	for _, pre := range []string{"/v1", ""} {
		mux.HandleFunc("POST "+pre+"/files", s.uploadFile)
		mux.HandleFunc("DELETE "+pre+"/files/{id}", s.deleteFile)
		mux.HandleFunc("GET "+pre+"/messages/batches", s.listMessageBatches)
		mux.HandleFunc("DELETE "+pre+"/messages/batches/{id}", s.deleteMessageBatch)
		mux.HandleFunc("GET "+pre+"/messages/batches/{id}/moved-results", s.messageBatchResults)
		mux.HandleFunc("GET "+pre+"/files/{id}/content", s.fileContent)
		mux.HandleFunc("POST "+pre+"/batches", s.createBatch)
		mux.HandleFunc("GET "+pre+"/batches", s.listBatches)
		mux.HandleFunc("GET "+pre+"/batches/{id}", s.getBatch)
		mux.HandleFunc("POST "+pre+"/batches/{id}/cancel", s.cancelBatch)
		mux.HandleFunc("POST "+pre+"/messages/batches", s.createMessageBatch)
		mux.HandleFunc("GET "+pre+"/messages/batches/{id}", s.getMessageBatch)
		mux.HandleFunc("GET "+pre+"/messages/batches/{id}/results", s.messageBatchResults)
		mux.HandleFunc("POST "+pre+"/messages/batches/{id}/cancel", s.cancelMessageBatch)
	}
}

func (s *Server) bt() *batches {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.batch == nil {
		s.batch = &batches{files: map[string][]byte{}, batches: map[string]*simBatch{}, downloads: map[string]int{}, rng: rand.New(rand.NewPCG(s.o.Faults.Seed, 0xba7c4))}
	}
	return s.batch
}

// maxBatchFile bounds an uploaded file (the Batch API's 200 MB).
const maxBatchFile = 200 << 20

func (s *Server) uploadFile(w http.ResponseWriter, r *http.Request) {
	purpose, name, data, ok, err := readUpload(r)
	if err != nil {
		writeError(w, 400, "invalid_request_error", "expected a multipart form with file and purpose", nil)
		return
	}
	if purpose != "batch" {
		writeError(w, 400, "invalid_request_error", fmt.Sprintf("purpose must be batch, got %q", purpose), nil)
		return
	}
	if !ok {
		writeError(w, 400, "invalid_request_error", "no file in the form", nil)
		return
	}
	if len(data) > maxBatchFile || s.o.Batch.MaxBytes > 0 && int64(len(data)) > s.o.Batch.MaxBytes {
		writeError(w, 400, "invalid_request_error", "File is too large: a batch input file can be up to 200 MB in size.", nil)
		return
	}
	b := s.bt()
	b.mu.Lock()
	b.n++
	id := fmt.Sprintf("file-sim%06d", b.n)
	b.files[id] = data
	b.mu.Unlock()
	writeJSON(w, 200, map[string]any{"id": id, "object": "file", "bytes": len(data), "created_at": time.Now().Unix(),
		"filename": name, "purpose": "batch", "status": "processed"}, nil)
}

// readUpload reads a file upload's form as it streams in: its purpose
// (the form's value, else the query's, as Request.FormValue reads it)
// and its file part's name and bytes (ok says there was one), up to one
// byte past maxBatchFile. Parsing the form first kept a file over 32 MB
// on disk and read it back, and grew its bytes a copy at a time: most of
// what an upload cost the server.
func readUpload(r *http.Request) (purpose, name string, data []byte, ok bool, err error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return "", "", nil, false, err
	}
	gotPurpose := false
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", "", nil, false, err
		}
		switch {
		case p.FormName() == "file" && p.FileName() != "" && !ok:
			// The request's length bounds the file's: one buffer holds it.
			hint := min(max(r.ContentLength, 0), maxBatchFile+1) + bytes.MinRead
			buf := bytes.NewBuffer(make([]byte, 0, hint))
			if _, err := buf.ReadFrom(io.LimitReader(p, maxBatchFile+1)); err != nil {
				return "", "", nil, false, err
			}
			name, data, ok = p.FileName(), buf.Bytes(), true
		case p.FormName() == "purpose" && p.FileName() == "" && !gotPurpose:
			v, err := io.ReadAll(io.LimitReader(p, 1<<10))
			if err != nil {
				return "", "", nil, false, err
			}
			purpose, gotPurpose = string(v), true
		}
		p.Close()
	}
	if !gotPurpose {
		purpose = r.URL.Query().Get("purpose")
	}
	return purpose, name, data, ok, nil
}

func (s *Server) fileContent(w http.ResponseWriter, r *http.Request) {
	b := s.bt()
	b.mu.Lock()
	data, ok := b.files[r.PathValue("id")]
	b.mu.Unlock()
	if !ok {
		writeError(w, 404, "not_found", "no such file", nil)
		return
	}
	s.download(w, "application/octet-stream", r.PathValue("id"), data)
}

// download serves a results body, failing or cutting it off as the
// options say.
func (s *Server) download(w http.ResponseWriter, ctype, key string, data []byte) {
	b := s.bt()
	b.mu.Lock()
	b.downloads[key]++
	n := b.downloads[key]
	b.mu.Unlock()
	o := s.o.Batch
	if n <= o.FailDownloads {
		writeError(w, 503, "server_error", "The server is overloaded (injected by budge sim serve)", nil)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	if n <= o.FailDownloads+o.CutDownloads {
		w.Write(data[:len(data)/2])
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
			}
		}
		return
	}
	w.Write(data)
}

// Deleted says how many files and message batches were deleted.
func (s *Server) Deleted() int {
	b := s.bt()
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.deleted
}

func (s *Server) deleteFile(w http.ResponseWriter, r *http.Request) {
	b := s.bt()
	id := r.PathValue("id")
	b.mu.Lock()
	_, ok := b.files[id]
	delete(b.files, id)
	if ok {
		b.deleted++
	}
	b.mu.Unlock()
	if !ok {
		writeError(w, 404, "not_found", "no such file", nil)
		return
	}
	writeJSON(w, 200, map[string]any{"id": id, "object": "file", "deleted": true}, nil)
}

// loseAnswer closes the connection of a create whose answer is to be
// lost (the nth create); it reports whether it did.
func (s *Server) loseAnswer(w http.ResponseWriter, nth int) bool {
	for _, n := range s.o.Batch.LoseCreate {
		if n == nth {
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					c.Close()
					return true
				}
			}
		}
	}
	return false
}

// batchRequest is a request of a batch: its custom_id and its body (an
// OpenAI line's body, a message batch request's params), read once when
// the batch is created.
type batchRequest struct {
	customID string
	body     []byte
}

// newBatch registers a batch of requests.
func (s *Server) newBatch(style string, lines []batchRequest, meta map[string]string) *simBatch {
	b := s.bt()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n++
	nth := len(b.order) + 1
	id := fmt.Sprintf("batch_sim%06d", b.n)
	if style == "anthropic" {
		id = fmt.Sprintf("msgbatch_sim%06d", b.n)
	}
	sb := &simBatch{style: style, id: id, nth: nth, created: time.Now(), lines: lines, total: len(lines), metadata: meta, status: "in_progress"}
	b.batches[id] = sb
	b.order = append(b.order, id)
	return sb
}

func (s *Server) createBatch(w http.ResponseWriter, r *http.Request) {
	var req struct {
		InputFileID      string            `json:"input_file_id"`
		Endpoint         string            `json:"endpoint"`
		CompletionWindow string            `json:"completion_window"`
		Metadata         map[string]string `json:"metadata"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		writeError(w, 400, "invalid_request_error", "body is not a batch request", nil)
		return
	}
	if req.Endpoint != "/v1/chat/completions" {
		writeError(w, 400, "invalid_request_error", fmt.Sprintf("endpoint %q is not served; use /v1/chat/completions", req.Endpoint), nil)
		return
	}
	if req.CompletionWindow != "24h" {
		writeError(w, 400, "invalid_request_error", "completion_window must be 24h", nil)
		return
	}
	b := s.bt()
	b.mu.Lock()
	data, ok := b.files[req.InputFileID]
	b.mu.Unlock()
	if !ok {
		writeError(w, 400, "invalid_request_error", "no such input file", nil)
		return
	}
	var lines []batchRequest
	ids := map[string]bool{}
	// The lines are read in place: a request's body is a slice of the
	// file, kept until the batch ends.
	for n, rest := 1, data; len(rest) > 0; n++ {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var l inputLine
		var err error
		if !decodeInputLine(line, &l) {
			l = inputLine{}
			err = json.Unmarshal(line, &l)
		}
		if err != nil || l.CustomID == "" || l.Method != "POST" || l.URL != req.Endpoint {
			writeError(w, 400, "invalid_request_error", fmt.Sprintf("input file line %d is not a request line for %s", n, req.Endpoint), nil)
			return
		}
		if ids[l.CustomID] {
			writeError(w, 400, "invalid_request_error", fmt.Sprintf("input file line %d repeats custom_id %s", n, l.CustomID), nil)
			return
		}
		ids[l.CustomID] = true
		lines = append(lines, batchRequest{l.CustomID, l.Body})
	}
	if len(lines) == 0 || len(lines) > 50_000 {
		writeError(w, 400, "invalid_request_error", fmt.Sprintf("a batch holds 1 to 50000 requests, got %d", len(lines)), nil)
		return
	}
	sb := s.newBatch("openai", lines, req.Metadata)
	sb.endpoint, sb.input = req.Endpoint, req.InputFileID
	if s.loseAnswer(w, sb.nth) {
		return
	}
	writeJSON(w, 200, s.openaiBatch(sb), nil)
}

func (s *Server) lookupBatch(w http.ResponseWriter, id, style string) *simBatch {
	b := s.bt()
	b.mu.Lock()
	sb, ok := b.batches[id]
	ok = ok && !sb.gone
	b.mu.Unlock()
	if !ok || sb.style != style {
		if style == "anthropic" {
			writeAnthropicError(w, 404, "not_found_error", "no such message batch")
		} else {
			writeError(w, 404, "not_found", "no such batch", nil)
		}
		return nil
	}
	return sb
}

func (s *Server) getBatch(w http.ResponseWriter, r *http.Request) {
	if sb := s.lookupBatch(w, r.PathValue("id"), "openai"); sb != nil {
		s.advance(sb)
		writeJSON(w, 200, s.openaiBatch(sb), nil)
	}
}

func (s *Server) cancelBatch(w http.ResponseWriter, r *http.Request) {
	if sb := s.lookupBatch(w, r.PathValue("id"), "openai"); sb != nil {
		s.cancel(sb)
		writeJSON(w, 200, s.openaiBatch(sb), nil)
	}
}

// pageLimit is how many batches a page of a list holds: the request's
// limit, or 20 when it names none, or none from 1 to most.
func pageLimit(r *http.Request, most int) int {
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	if limit <= 0 || limit > most {
		limit = 20
	}
	return limit
}

func (s *Server) listBatches(w http.ResponseWriter, r *http.Request) {
	b := s.bt()
	limit := pageLimit(r, 100)
	after := r.URL.Query().Get("after")
	// The batches are read under the lock: another request may be
	// creating one.
	b.mu.Lock()
	ids := append([]string(nil), b.order...)
	// Newest first, as the API lists them.
	sort.Sort(sort.Reverse(sort.StringSlice(ids)))
	batches := make([]*simBatch, len(ids))
	for i, id := range ids {
		batches[i] = b.batches[id]
	}
	b.mu.Unlock()
	var data []any
	started := after == ""
	more := false
	for i, id := range ids {
		if !started {
			started = id == after
			continue
		}
		sb := batches[i]
		if sb.style != "openai" {
			continue
		}
		if len(data) == limit {
			more = true
			break
		}
		data = append(data, s.openaiBatch(sb))
	}
	if data == nil {
		data = []any{}
	}
	writeJSON(w, 200, map[string]any{"object": "list", "data": data, "has_more": more}, nil)
}

// advance ends a batch once its delay has passed: every request is
// answered by the model it names, as the chat endpoint would, except the
// drawn errors and, for a batch set to expire, the second half.
func (s *Server) advance(sb *simBatch) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.status != "in_progress" || time.Since(sb.created) < s.o.Batch.Delay || slices.Contains(s.o.Batch.Hold, sb.nth) {
		return
	}
	expire := false
	for _, n := range s.o.Batch.Expire {
		expire = expire || n == sb.nth
	}
	for _, n := range s.o.Batch.Fail {
		if n == sb.nth && sb.style == "openai" {
			code := s.o.Batch.FailCode
			if code == "" {
				code = "token_limit_exceeded"
			}
			sb.status, sb.ended, sb.failCode = "failed", time.Now(), code
			return
		}
	}
	var out, errs bytes.Buffer
	for i, line := range sb.lines {
		if expire && i >= len(sb.lines)/2 {
			sb.expired++
			s.batchLine(sb, &out, &errs, line, "expired")
			continue
		}
		b := s.bt()
		b.mu.Lock()
		fail := b.rng.Float64() < s.o.Batch.ErrorRate
		b.mu.Unlock()
		outcome := "answer"
		if fail {
			outcome = "error"
		}
		s.batchLine(sb, &out, &errs, line, outcome)
	}
	sb.status, sb.ended = "completed", time.Now()
	if expire {
		sb.status = "expired"
	}
	s.settle(sb, &out, &errs, false)
}

// settle stores an ended batch's results: an Anthropic batch's in the
// batch, an OpenAI batch's as its output and error files (the error file
// even when empty if always).
func (s *Server) settle(sb *simBatch, out, errs *bytes.Buffer, always bool) {
	// Its requests are answered: the server keeps their results, not
	// them (a million-session batch run sends some 3 million).
	sb.lines = nil
	if sb.style == "anthropic" {
		sb.status = "ended"
		sb.results = out.Bytes()
		return
	}
	b := s.bt()
	b.mu.Lock()
	defer b.mu.Unlock()
	if out.Len() > 0 {
		b.n++
		sb.output = fmt.Sprintf("file-sim%06d", b.n)
		b.files[sb.output] = out.Bytes()
	}
	if errs.Len() > 0 || always {
		b.n++
		sb.errors = fmt.Sprintf("file-sim%06d", b.n)
		b.files[sb.errors] = errs.Bytes()
	}
}

// cancel ends an open batch as cancelled, with no request answered.
func (s *Server) cancel(sb *simBatch) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.status != "in_progress" {
		return
	}
	var out, errs bytes.Buffer
	done := int(float64(len(sb.lines)) * s.o.Batch.CancelDone)
	for i, line := range sb.lines {
		if i < done {
			s.batchLine(sb, &out, &errs, line, "answer")
			continue
		}
		sb.cancelled++
		s.batchLine(sb, &out, &errs, line, "cancelled")
	}
	sb.status, sb.ended = "cancelled", time.Now()
	s.settle(sb, &out, &errs, true)
}

// batchLine answers one request line into the batch's results; every
// request the model answers is in the server's request log, as a chat
// request would be, with the fault "batch".
func (s *Server) batchLine(sb *simBatch, out, errs *bytes.Buffer, l batchRequest, outcome string) {
	body := l.body
	var status int
	var resp []byte
	var reqID string
	if outcome == "answer" || outcome == "error" {
		seq, _, _, _ := s.draw()
		reqID = fmt.Sprintf("req_sim%08d", seq)
		sum := sha256.Sum256(body)
		entry := LogEntry{Seq: seq, Time: time.Now().UTC(), Fault: "batch", BodySHA: hex.EncodeToString(sum[:])}
		if outcome == "error" {
			status = 500
			entry.Fault = "batch-error"
		} else {
			status, resp = s.answer(sb.style, body, &entry)
		}
		entry.Status = status
		s.record(entry)
	}
	if sb.style == "anthropic" {
		var res any
		switch {
		case outcome == "expired":
			res = map[string]any{"type": "expired"}
		case outcome == "cancelled":
			res = map[string]any{"type": "canceled"}
		case status == 200:
			sb.completed++
			res = map[string]any{"type": "succeeded", "message": json.RawMessage(resp)}
		default:
			sb.failed++
			msg := "Internal server error (injected by budge sim serve)"
			if status != 500 && len(resp) > 0 {
				msg = string(resp)
			}
			res = map[string]any{"type": "errored", "error": map[string]any{"type": "error", "error": map[string]any{"type": "api_error", "message": msg}}}
		}
		b, _ := json.Marshal(map[string]any{"custom_id": l.customID, "result": res})
		out.Write(append(b, '\n'))
		return
	}
	switch {
	case outcome == "expired" || outcome == "cancelled":
		b, _ := json.Marshal(map[string]any{"id": "batch_req_" + l.customID, "custom_id": l.customID, "response": nil,
			"error": map[string]any{"code": "batch_" + outcome, "message": "This request could not be executed before the batch " + outcome + "."}})
		errs.Write(append(b, '\n'))
	case status == 200:
		sb.completed++
		out.Write(appendResultLine(nil, l.customID, reqID, status, resp))
	default:
		sb.failed++
		eb := resp
		if status == 500 {
			eb, _ = json.Marshal(map[string]any{"error": map[string]any{"message": "The server had an error (injected by budge sim serve)", "type": "server_error", "code": "server_error"}})
		}
		errs.Write(appendResultLine(nil, l.customID, reqID, status, eb))
	}
}

// appendResultLine appends the line of an OpenAI output or error file for
// a request that ran, as json.Marshal writes it of a map (its keys in
// order), with its newline. body is compact JSON (encodeResponse's or
// json.Marshal's), which json.Marshal only HTML-escapes: compacting it
// again was most of what the server spent writing results.
func appendResultLine(b []byte, customID, reqID string, status int, body []byte) []byte {
	b = append(b, `{"custom_id":`...)
	b = jsontext.AppendString(b, customID)
	b = append(b, `,"error":null,"id":`...)
	b = jsontext.AppendString(b, "batch_req_"+customID)
	b = append(b, `,"response":{"body":`...)
	if body == nil {
		b = append(b, "null"...)
	} else {
		b = jsontext.AppendHTMLEscaped(b, body)
	}
	b = append(b, `,"request_id":`...)
	b = jsontext.AppendString(b, reqID)
	b = append(b, `,"status_code":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	return append(b, "}}\n"...)
}

// answer asks the model a request of the batch's style and encodes its
// answer the same way: the status and the body.
func (s *Server) answer(style string, body []byte, entry *LogEntry) (int, []byte) {
	req, werr := decodeRequest(body)
	if style == "anthropic" {
		req, werr = decodeAnthropicRequest(body)
	}
	errBody := func(status int, code, msg string) (int, []byte) {
		if style == "anthropic" {
			b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": code, "message": msg}})
			return status, b
		}
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": code, "code": code}})
		return status, b
	}
	if werr != nil {
		return errBody(400, "invalid_request_error", werr.Error())
	}
	entry.Model, entry.Seed, entry.Messages = req.Model, req.Settings.Seed, len(req.Messages)
	p, err := s.model(req.Model)
	if err != nil {
		return errBody(404, "not_found_error", err.Error())
	}
	resp, err := p.Chat(contextBackground(), req)
	if err != nil {
		return errBody(500, "api_error", err.Error())
	}
	if style == "anthropic" {
		return 200, encodeAnthropicResponse(resp)
	}
	return 200, encodeResponse(resp, time.Now())
}

func (s *Server) openaiBatch(sb *simBatch) map[string]any {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	m := map[string]any{"id": sb.id, "object": "batch", "endpoint": sb.endpoint, "input_file_id": sb.input,
		"completion_window": "24h", "status": sb.status, "created_at": sb.created.Unix(),
		"expires_at": sb.created.Add(24 * time.Hour).Unix(), "metadata": sb.metadata,
		"request_counts": map[string]int{"total": sb.total, "completed": sb.completed, "failed": sb.failed + sb.expired + sb.cancelled}}
	if sb.output != "" {
		m["output_file_id"] = sb.output
	}
	if sb.errors != "" {
		m["error_file_id"] = sb.errors
	}
	switch sb.status {
	case "completed":
		m["completed_at"] = sb.ended.Unix()
	case "expired":
		m["expired_at"] = sb.ended.Unix()
	case "cancelled":
		m["cancelled_at"] = sb.ended.Unix()
	case "failed":
		m["failed_at"] = sb.ended.Unix()
		m["errors"] = map[string]any{"object": "list", "data": []any{map[string]any{"code": sb.failCode,
			"message": "Enqueued token limit reached for the model (injected by budge sim serve).", "line": nil, "param": nil}}}
	}
	return m
}

// BatchCounts says how many batches the server was sent, by style.
func (s *Server) BatchCounts() map[string]int {
	b := s.bt()
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]int{}
	for _, sb := range b.batches {
		out[sb.style]++
	}
	return out
}

// BatchStates says how many of the server's batches are in each state
// ("in_progress", "completed", "expired", "ended" for a Message Batch,
// and "cancelled" for a batch of either style cancelled while open).
func (s *Server) BatchStates() map[string]int {
	b := s.bt()
	b.mu.Lock()
	all := make([]*simBatch, 0, len(b.batches))
	for _, sb := range b.batches {
		all = append(all, sb)
	}
	b.mu.Unlock()
	out := map[string]int{}
	for _, sb := range all {
		sb.mu.Lock()
		if sb.cancelled > 0 {
			out["cancelled"]++
		} else {
			out[sb.status]++
		}
		sb.mu.Unlock()
	}
	return out
}
