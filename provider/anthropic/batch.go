package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	an "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/batch"
)

// Batch is the Message Batches API: requests are sent in one body, the
// batch's processing status read until it has ended, and its results read
// as JSON lines, each keyed by its custom_id.
type Batch struct {
	p      *Provider
	client an.Client
}

// BatchAPI returns the endpoint's Message Batches API.
func (p *Provider) BatchAPI() batch.API {
	return &Batch{p: p, client: an.NewClient(p.opts...)}
}

// The Message Batches API's documented limits and window.
const (
	batchRequests = 100_000
	batchBytes    = 256 << 20
	batchWindow   = 24 * time.Hour
)

func (b *Batch) Style() string { return "anthropic" }
func (b *Batch) Limits() batch.Limits {
	return batch.Limits{Requests: batchRequests, Bytes: batchBytes}
}
func (b *Batch) Window() time.Duration { return batchWindow }

// Encode is the Messages request a batch entry carries as its params,
// exactly what a direct call sends.
func (b *Batch) Encode(req *chat.Request) ([]byte, error) {
	r := *req
	r.Model = b.p.cfg.Model
	params, extra, err := Params(&r, b.p.cfg.Format)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(params)
	if err != nil || len(extra) == 0 {
		return body, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	for k, v := range extra {
		m[k], _ = json.Marshal(v)
	}
	return json.Marshal(m)
}

// Submit creates a message batch. The API keeps no metadata, so Find has
// nothing to look for: a batch whose id a kill kept from the store is
// sent again.
func (b *Batch) Submit(ctx context.Context, token string, reqs []batch.Request) (string, error) {
	type entry struct {
		CustomID string          `json:"custom_id"`
		Params   json.RawMessage `json:"params"`
	}
	body := struct {
		Requests []entry `json:"requests"`
	}{}
	for _, r := range reqs {
		body.Requests = append(body.Requests, entry{r.CustomID, r.Body})
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return "", &provider.Error{Kind: provider.BadRequest, Msg: err.Error()}
	}
	var mb an.MessageBatch
	if err := b.call(ctx, &mb, func(ctx context.Context, opts ...option.RequestOption) error {
		return b.client.Post(ctx, "v1/messages/batches", json.RawMessage(raw), nil, opts...)
	}); err != nil {
		return "", err
	}
	if mb.ID == "" {
		return "", &provider.Error{Kind: provider.Malformed, Msg: "creating the message batch gave no id"}
	}
	return mb.ID, nil
}

// Find cannot tell budge's batches: the API stores no metadata.
func (b *Batch) Find(ctx context.Context, token string) (string, error) { return "", nil }

// Status reads a message batch: in_progress, canceling or ended.
func (b *Batch) Status(ctx context.Context, id string) (batch.Status, error) {
	var mb an.MessageBatch
	if err := b.call(ctx, &mb, func(ctx context.Context, opts ...option.RequestOption) error {
		return b.client.Get(ctx, "v1/messages/batches/"+id, nil, nil, opts...)
	}); err != nil {
		return batch.Status{}, err
	}
	c := mb.RequestCounts
	return batch.Status{State: string(mb.ProcessingStatus), Ended: mb.ProcessingStatus == an.MessageBatchProcessingStatusEnded,
		Counts: map[string]int{"processing": int(c.Processing), "succeeded": int(c.Succeeded), "errored": int(c.Errored),
			"canceled": int(c.Canceled), "expired": int(c.Expired)}}, nil
}

// resultLine is one line of a batch's results.
type resultLine struct {
	CustomID string `json:"custom_id"`
	Result   struct {
		Type    string          `json:"type"` // succeeded, errored, canceled, expired
		Message json.RawMessage `json:"message"`
		Error   json.RawMessage `json:"error"`
	} `json:"result"`
}

// Results streams an ended batch's results.
func (b *Batch) Results(ctx context.Context, id string, fn func(batch.Result) error) error {
	var res *http.Response
	err := b.client.Get(ctx, "v1/messages/batches/"+id+"/results", nil, &res)
	if err != nil {
		var ae *an.Error
		if errors.As(err, &ae) {
			return b.p.api.Redact.Error(provider.ClassifyHTTP(provider.HTTPFailure{Status: ae.StatusCode, Message: ae.Error()}))
		}
		return provider.ClassifyTransport(ctx, err)
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
				return &provider.Error{Kind: provider.Malformed, Msg: fmt.Sprintf("message batch %s results, line %d: over the size limit, and no custom_id at its start", id, line)}
			}
			if err := fn(batch.OverLongResult(cid)); err != nil {
				return err
			}
			continue
		}
		var l resultLine
		if err := json.Unmarshal(raw, &l); err != nil || l.CustomID == "" {
			return &provider.Error{Kind: provider.Malformed, Msg: fmt.Sprintf("message batch %s results, line %d: not a result line", id, line)}
		}
		if err := fn(b.result(ctx, l)); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return &provider.Error{Kind: provider.Malformed, Msg: fmt.Sprintf("message batch %s results, after line %d: %v", id, line, err)}
	}
	return nil
}

// result turns one line into an answer or a classified failure.
func (b *Batch) result(ctx context.Context, l resultLine) batch.Result {
	r := batch.Result{CustomID: l.CustomID}
	redact := b.p.api.Redact
	switch l.Result.Type {
	case "succeeded":
		resp, err := Decode(l.Result.Message)
		if err != nil {
			r.Err = redact.Error(provider.Classify(ctx, err))
			return r
		}
		redact.Response(resp)
		r.Response = resp
	case "errored":
		code, msg := ErrorBody(l.Result.Error)
		status := statusOf(code)
		if status == 0 {
			status = 500
		}
		r.Err = redact.Error(provider.ClassifyHTTP(provider.HTTPFailure{Status: status, Body: l.Result.Error, Code: code, Message: msg}))
	case "canceled", "expired":
		r.Err = &provider.Error{Kind: provider.Transient, Msg: "the request was " + l.Result.Type + " before it ran"}
	default:
		r.Err = &provider.Error{Kind: provider.Malformed, Msg: fmt.Sprintf("message batch result of type %q", l.Result.Type)}
	}
	return r
}

// Cancel asks for a message batch to be cancelled.
func (b *Batch) Cancel(ctx context.Context, id string) error {
	var mb an.MessageBatch
	return b.call(ctx, &mb, func(ctx context.Context, opts ...option.RequestOption) error {
		return b.client.Post(ctx, "v1/messages/batches/"+id+"/cancel", nil, nil, opts...)
	})
}

// call makes one request with the exchange recorder installed and decodes
// its 2xx body into out.
func (b *Batch) call(ctx context.Context, out any, send func(ctx context.Context, opts ...option.RequestOption) error) error {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	x := provider.Exchange{MaxBody: b.p.cfg.MaxBody, Budget: b.p.cfg.Budget}
	defer x.Release()
	sdkErr := send(cctx, option.WithMiddleware(x.Middleware))
	if e := x.Failure(ctx, sdkErr, ErrorBody); e != nil {
		return b.p.api.Redact.Error(e)
	}
	if err := json.Unmarshal(x.Body, out); err != nil {
		return &provider.Error{Kind: provider.Malformed, Status: x.Status, Msg: "message batch API answer: " + err.Error()}
	}
	return nil
}
