package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/textproto"
	"strings"
	"time"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/internal/jsontext"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/batch"
)

// Batch is the endpoint's Batch API: a JSONL file of chat completion
// requests is uploaded, a batch made of it, its state read until it ends,
// and its output and error files read back.
type Batch struct {
	batch.Terms
	p       *Provider
	files   oa.FileService
	batches oa.BatchService
}

// terms are the Batch API's documented limits and window.
var terms = batch.Terms{Name: "openai", Max: batch.Limits{Requests: 50_000, Bytes: 200 << 20}, Completion: 24 * time.Hour}

// BatchAPI returns the endpoint's Batch API.
func (p *Provider) BatchAPI() batch.API {
	return &Batch{Terms: terms, p: p, files: oa.NewFileService(p.client.Options...), batches: oa.NewBatchService(p.client.Options...)}
}

// tokenKey is the metadata key budge marks its batches with.
const tokenKey = "budge_token"

// Encode is the chat completion body the batch line carries.
func (b *Batch) Encode(req *chat.Request) ([]byte, error) {
	r := *req
	r.Model = b.p.cfg.Model
	return Body(&r, b.p.cfg.Format)
}

// appendBatchLine appends a request's line of a batch input file, as
// json.Encoder writes it (custom_id, method, url, body): body is a request body as Body
// writes it (compact JSON, without HTML escapes), so that what the
// encoder did to it (validate and compact it again, escape <, > and &, a
// third of a batch run's encoding) comes down to the escapes, made as the
// body is copied.
func appendBatchLine(b []byte, customID string, body []byte) []byte {
	b = append(b, `{"custom_id":`...)
	b = jsontext.AppendString(b, customID)
	b = append(b, `,"method":"POST","url":"/v1/chat/completions","body":`...)
	b = jsontext.AppendHTMLEscaped(b, body)
	return append(b, "}\n"...)
}

// Submit uploads the requests and creates a batch of them. The upload's
// body is written to a temporary file from the requests and streamed from
// there: a batch of 200 MB is not held in memory.
func (b *Batch) Submit(ctx context.Context, token string, reqs batch.Requests) (string, error) {
	var f oa.FileObject
	err := b.call(ctx, &f, func(ctx context.Context, opt option.RequestOption) error {
		var ct string
		body, err := batch.Body(func(w io.Writer) error {
			mw := multipart.NewWriter(w)
			ct = mw.FormDataContentType()
			if err := mw.WriteField("purpose", string(oa.FilePurposeBatch)); err != nil {
				return err
			}
			h := make(textproto.MIMEHeader)
			h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, token+".jsonl"))
			h.Set("Content-Type", "application/jsonl")
			part, err := mw.CreatePart(h)
			if err != nil {
				return err
			}
			var line []byte
			if err := reqs.Each(func(r batch.Request) error {
				line = appendBatchLine(line[:0], r.CustomID, r.Body)
				_, err := part.Write(line)
				return err
			}); err != nil {
				return err
			}
			return mw.Close()
		})
		if err != nil {
			return err
		}
		defer body.Close()
		return b.p.client.Post(ctx, "files", nil, nil, opt, option.WithRequestBody(ct, body), option.WithMiddleware(batch.WithLength(body.Size)))
	})
	if err != nil {
		return "", tooLarge(err)
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
		if pe := provider.Classify(ctx, err); !pe.Kind.Infrastructure() {
			// Refused: the uploaded file would stay at the endpoint.
			b.deleteFile(ctx, f.ID)
		}
		return "", tooLarge(err)
	}
	if bt.ID == "" {
		return "", &provider.Error{Kind: provider.Malformed, Msg: "creating the batch gave no batch id"}
	}
	return bt.ID, nil
}

// tooLarge marks a refusal for size: a 413, or a 400 whose message says
// the file or batch is over a limit.
func tooLarge(err error) error {
	var pe *provider.Error
	if !errors.As(err, &pe) {
		return err
	}
	msg := strings.ToLower(pe.Msg)
	if pe.Status == 413 || pe.Status == 400 && (strings.Contains(msg, "too large") || strings.Contains(msg, "exceeds") && (strings.Contains(msg, "size") || strings.Contains(msg, "mb") || strings.Contains(msg, "bytes"))) {
		return &provider.Error{Kind: pe.Kind, Status: pe.Status, Msg: pe.Msg, Err: batch.ErrTooLarge}
	}
	return err
}

// Find looks through the endpoint's recent batches for budge's token,
// kept in each batch's metadata.
func (b *Batch) Find(ctx context.Context, q batch.Lookup) (string, error) {
	token := q.Token
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
	if bt.Status == oa.BatchStatusFailed {
		st.Failure = b.p.api.Redact.Error(failure(bt.Errors.Data))
	}
	return st, nil
}

// failure is why a batch failed as a whole (its errors.data), classified:
// an organisation's limit of enqueued tokens is a quota, the rest (an
// input file the endpoint refused) a bad request. Neither is sent again
// as it is.
func failure(errs []oa.BatchError) *provider.Error {
	e := &provider.Error{Kind: provider.BadRequest}
	if len(errs) == 0 {
		e.Msg = "the batch failed, and the endpoint gave no reason"
		return e
	}
	var parts []string
	for i, x := range errs {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(errs)-3))
			break
		}
		s := x.Code + ": " + x.Message
		if x.Line > 0 {
			s += fmt.Sprintf(" (input line %d)", x.Line)
		}
		parts = append(parts, s)
		if strings.Contains(x.Code, "token_limit") || strings.Contains(x.Code, "quota") {
			e.Kind = provider.QuotaExceeded
		}
	}
	e.Msg = "the batch failed: " + strings.Join(parts, "; ")
	return e
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
	return batch.ReadResults(ctx, res.Body, "batch results file "+fileID, func(l *resultLine) string { return l.CustomID },
		func(l *resultLine) batch.Result { return b.result(ctx, *l) }, fn)
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
		} else {
			r.Unrun = true
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

// Cleanup deletes a collected batch's input, output and error files.
func (b *Batch) Cleanup(ctx context.Context, id string) error {
	bt, err := b.get(ctx, id)
	if err != nil {
		return err
	}
	var first error
	for _, f := range []string{bt.InputFileID, bt.OutputFileID, bt.ErrorFileID} {
		if err := b.deleteFile(ctx, f); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// deleteFile deletes an uploaded or result file; one already gone is
// deleted.
func (b *Batch) deleteFile(ctx context.Context, id string) error {
	if id == "" {
		return nil
	}
	var out oa.FileDeleted
	err := b.call(context.WithoutCancel(ctx), &out, func(ctx context.Context, opt option.RequestOption) error {
		_, err := b.files.Delete(ctx, id, opt)
		return err
	})
	var pe *provider.Error
	if errors.As(err, &pe) && pe.Status == 404 {
		return nil
	}
	return err
}

// call makes one SDK request with the exchange recorder installed and
// decodes its 2xx body into out.
func (b *Batch) call(ctx context.Context, out any, send func(ctx context.Context, opt option.RequestOption) error) error {
	return b.p.api.Fetch(ctx, "batch API", out, func(ctx context.Context, x *provider.Exchange) error {
		return send(ctx, option.WithMiddleware(x.Middleware))
	})
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
