package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/batch"
)

// Batch is the endpoint's Batch API: a JSONL file of chat completion
// requests is uploaded, a batch made of it, its state read until it ends,
// and its output and error files read back.
type Batch struct {
	p       *Provider
	files   oa.FileService
	batches oa.BatchService
}

// BatchAPI returns the endpoint's Batch API.
func (p *Provider) BatchAPI() batch.API {
	return &Batch{p: p, files: oa.NewFileService(p.client.Options...), batches: oa.NewBatchService(p.client.Options...)}
}

// The Batch API's documented limits and window.
const (
	batchRequests = 50_000
	batchBytes    = 200 << 20
	batchWindow   = 24 * time.Hour
	// tokenKey is the metadata key budge marks its batches with.
	tokenKey = "budge_token"
)

func (b *Batch) Style() string { return "openai" }
func (b *Batch) Limits() batch.Limits {
	return batch.Limits{Requests: batchRequests, Bytes: batchBytes}
}
func (b *Batch) Window() time.Duration { return batchWindow }

// Encode is the chat completion body the batch line carries.
func (b *Batch) Encode(req *chat.Request) ([]byte, error) {
	r := *req
	r.Model = b.p.cfg.Model
	return Body(&r, b.p.cfg.Format)
}

// batchLine is one line of the input file.
type batchLine struct {
	CustomID string          `json:"custom_id"`
	Method   string          `json:"method"`
	URL      string          `json:"url"`
	Body     json.RawMessage `json:"body"`
}

// Submit uploads the requests and creates a batch of them.
func (b *Batch) Submit(ctx context.Context, token string, reqs []batch.Request) (string, error) {
	var file bytes.Buffer
	size := 0
	for _, r := range reqs {
		size += len(r.Body) + len(r.CustomID) + 96
	}
	file.Grow(size) // one allocation, not a doubling series
	enc := json.NewEncoder(&file)
	for _, r := range reqs {
		if err := enc.Encode(batchLine{CustomID: r.CustomID, Method: "POST", URL: "/v1/chat/completions", Body: r.Body}); err != nil {
			return "", &provider.Error{Kind: provider.BadRequest, Msg: err.Error()}
		}
	}
	var f oa.FileObject
	err := b.call(ctx, &f, func(ctx context.Context, opt option.RequestOption) error {
		_, err := b.files.New(ctx, oa.FileNewParams{File: oa.File(bytes.NewReader(file.Bytes()), token+".jsonl", "application/jsonl"), Purpose: oa.FilePurposeBatch}, opt)
		return err
	})
	if err != nil {
		return "", err
	}
	if f.ID == "" {
		return "", &provider.Error{Kind: provider.Malformed, Msg: "the file upload gave no file id"}
	}
	var bt oa.Batch
	err = b.call(ctx, &bt, func(ctx context.Context, opt option.RequestOption) error {
		_, err := b.batches.New(ctx, oa.BatchNewParams{InputFileID: f.ID, Endpoint: oa.BatchNewParamsEndpointV1ChatCompletions,
			CompletionWindow: oa.BatchNewParamsCompletionWindow24h, Metadata: shared.Metadata{tokenKey: token}}, opt)
		return err
	})
	if err != nil {
		return "", err
	}
	if bt.ID == "" {
		return "", &provider.Error{Kind: provider.Malformed, Msg: "creating the batch gave no batch id"}
	}
	return bt.ID, nil
}

// Find looks through the endpoint's recent batches for budge's token.
func (b *Batch) Find(ctx context.Context, token string) (string, error) {
	after := ""
	for page := 0; page < 20; page++ {
		var list struct {
			Data    []oa.Batch `json:"data"`
			HasMore bool       `json:"has_more"`
		}
		err := b.call(ctx, &list, func(ctx context.Context, opt option.RequestOption) error {
			q := oa.BatchListParams{Limit: oa.Int(100)}
			if after != "" {
				q.After = oa.String(after)
			}
			_, err := b.batches.List(ctx, q, opt)
			return err
		})
		if err != nil {
			return "", err
		}
		for _, bt := range list.Data {
			if bt.Metadata[tokenKey] == token {
				return bt.ID, nil
			}
		}
		if !list.HasMore || len(list.Data) == 0 {
			return "", nil
		}
		after = list.Data[len(list.Data)-1].ID
	}
	return "", nil
}

// Status reads a batch. It has ended when its files are final: completed,
// expired, cancelled or failed.
func (b *Batch) Status(ctx context.Context, id string) (batch.Status, error) {
	bt, err := b.get(ctx, id)
	if err != nil {
		return batch.Status{}, err
	}
	st := batch.Status{State: string(bt.Status), Counts: map[string]int{
		"completed": int(bt.RequestCounts.Completed), "failed": int(bt.RequestCounts.Failed),
		"pending": max(0, int(bt.RequestCounts.Total-bt.RequestCounts.Completed-bt.RequestCounts.Failed))}}
	switch bt.Status {
	case oa.BatchStatusCompleted, oa.BatchStatusExpired, oa.BatchStatusCancelled, oa.BatchStatusFailed:
		st.Ended = true
	}
	return st, nil
}

func (b *Batch) get(ctx context.Context, id string) (*oa.Batch, error) {
	var bt oa.Batch
	err := b.call(ctx, &bt, func(ctx context.Context, opt option.RequestOption) error {
		_, err := b.batches.Get(ctx, id, opt)
		return err
	})
	return &bt, err
}

// resultLine is one line of an output or error file.
type resultLine struct {
	CustomID string `json:"custom_id"`
	Response *struct {
		StatusCode int             `json:"status_code"`
		RequestID  string          `json:"request_id"`
		Body       json.RawMessage `json:"body"`
	} `json:"response"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Results reads the output file, then the error file, line by line.
func (b *Batch) Results(ctx context.Context, id string, fn func(batch.Result) error) error {
	bt, err := b.get(ctx, id)
	if err != nil {
		return err
	}
	for _, fileID := range []string{bt.OutputFileID, bt.ErrorFileID} {
		if fileID == "" {
			continue
		}
		if err := b.readFile(ctx, fileID, fn); err != nil {
			return err
		}
	}
	return nil
}

func (b *Batch) readFile(ctx context.Context, fileID string, fn func(batch.Result) error) error {
	res, err := b.files.Content(ctx, fileID)
	if err != nil {
		return sdkFailure(ctx, err)
	}
	defer res.Body.Close()
	sc := batch.ScanResults(res.Body)
	line := 0
	for sc.Scan() {
		line++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		if cid, over := batch.OverLong(raw); over {
			if cid == "" {
				return &provider.Error{Kind: provider.Malformed, Msg: fmt.Sprintf("batch results file %s, line %d: over the size limit, and no custom_id at its start", fileID, line)}
			}
			if err := fn(batch.OverLongResult(cid)); err != nil {
				return err
			}
			continue
		}
		var l resultLine
		if err := json.Unmarshal(raw, &l); err != nil || l.CustomID == "" {
			return &provider.Error{Kind: provider.Malformed, Msg: fmt.Sprintf("batch results file %s, line %d: not a result line", fileID, line)}
		}
		if err := fn(b.result(ctx, l)); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return &provider.Error{Kind: provider.Malformed, Msg: fmt.Sprintf("batch results file %s, after line %d: %v", fileID, line, err)}
	}
	return nil
}

// result turns one line into an answer or a classified failure, as a
// direct call's response would be.
func (b *Batch) result(ctx context.Context, l resultLine) batch.Result {
	r := batch.Result{CustomID: l.CustomID}
	redact := b.p.api.Redact
	switch {
	case l.Response != nil && l.Response.StatusCode >= 200 && l.Response.StatusCode < 300:
		resp, err := Decode(l.Response.Body)
		if err != nil {
			r.Err = redact.Error(provider.Classify(ctx, err))
			return r
		}
		resp.Meta.RequestID = l.Response.RequestID
		resp.Meta.Provider = b.p.cfg.Name
		redact.Response(resp)
		r.Response = resp
	case l.Response != nil:
		code, msg := ErrorBody(l.Response.Body)
		r.Err = redact.Error(provider.ClassifyHTTP(provider.HTTPFailure{Status: l.Response.StatusCode, Body: l.Response.Body, Code: code, Message: msg}))
	case l.Error != nil:
		kind := provider.Transient // batch_expired, batch_cancelled: never ran
		if !strings.HasPrefix(l.Error.Code, "batch_") {
			kind = provider.BadRequest
		}
		r.Err = redact.Error(&provider.Error{Kind: kind, Msg: l.Error.Code + ": " + l.Error.Message})
	default:
		r.Err = &provider.Error{Kind: provider.Malformed, Msg: "batch result line with neither response nor error"}
	}
	return r
}

// Cancel asks the endpoint to cancel a batch.
func (b *Batch) Cancel(ctx context.Context, id string) error {
	var bt oa.Batch
	return b.call(ctx, &bt, func(ctx context.Context, opt option.RequestOption) error {
		_, err := b.batches.Cancel(ctx, id, opt)
		return err
	})
}

// call makes one SDK request with the exchange recorder installed and
// decodes its 2xx body into out.
func (b *Batch) call(ctx context.Context, out any, send func(ctx context.Context, opt option.RequestOption) error) error {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	x := provider.Exchange{MaxBody: b.p.cfg.MaxBody, Budget: b.p.cfg.Budget}
	defer x.Release()
	sdkErr := send(cctx, option.WithMiddleware(x.Middleware))
	if e := x.Failure(ctx, sdkErr, ErrorBody); e != nil {
		return b.p.api.Redact.Error(e)
	}
	if err := json.Unmarshal(x.Body, out); err != nil {
		return &provider.Error{Kind: provider.Malformed, Status: x.Status, Msg: "batch API answer: " + err.Error()}
	}
	return nil
}

// sdkFailure classifies an error of a request made without the exchange
// recorder (a streamed file).
func sdkFailure(ctx context.Context, err error) *provider.Error {
	var ae *oa.Error
	if errors.As(err, &ae) {
		return provider.ClassifyHTTP(provider.HTTPFailure{Status: ae.StatusCode, Code: ae.Code, Message: ae.Message})
	}
	return provider.ClassifyTransport(ctx, err)
}
