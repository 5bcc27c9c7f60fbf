package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	an "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/limits"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/batch"
)

// Batch is the Message Batches API: requests are sent in one body, the
// batch's processing status read until it has ended, and its results read
// as JSON lines, each keyed by its custom_id.
type Batch struct {
	batch.Terms
	p      *Provider
	client an.Client
}

// terms are the Message Batches API's documented limits and window.
var terms = batch.Terms{Name: "anthropic", Max: batch.Limits{Requests: 100_000, Bytes: 256 << 20}, Completion: 24 * time.Hour}

// BatchAPI returns the endpoint's Message Batches API.
func (p *Provider) BatchAPI() batch.API {
	return &Batch{Terms: terms, p: p, client: an.NewClient(p.opts...)}
}

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

// Submit creates a message batch. The API keeps no metadata: Find
// recognises the batch by when it was sent and its requests.
func (b *Batch) Submit(ctx context.Context, token string, reqs batch.Requests) (string, error) {
	type entry struct {
		CustomID string          `json:"custom_id"`
		Params   json.RawMessage `json:"params"`
	}
	// The body is written to a temporary file from the requests and
	// streamed from there: a batch of 256 MB is not held in memory.
	write := func(w io.Writer) error {
		if _, err := io.WriteString(w, `{"requests":[`); err != nil {
			return err
		}
		n := 0
		if err := reqs.Each(func(r batch.Request) error {
			line, err := json.Marshal(entry{r.CustomID, r.Body})
			if err != nil {
				return &provider.Error{Kind: provider.BadRequest, Msg: err.Error()}
			}
			if n > 0 {
				if _, err := io.WriteString(w, ","); err != nil {
					return err
				}
			}
			n++
			_, err = w.Write(line)
			return err
		}); err != nil {
			return err
		}
		_, err := io.WriteString(w, "]}")
		return err
	}
	var mb an.MessageBatch
	if err := b.call(ctx, &mb, func(ctx context.Context, opts ...option.RequestOption) error {
		body, err := batch.Body(write)
		if err != nil {
			return err
		}
		defer body.Close()
		return b.client.Post(ctx, "v1/messages/batches", nil, nil, append(opts, option.WithRequestBody("application/json", body), option.WithMiddleware(batch.WithLength(body.Size)))...)
	}); err != nil {
		var pe *provider.Error
		if errors.As(err, &pe) && (pe.Status == 413 || pe.Status == 400 && strings.Contains(strings.ToLower(pe.Msg), "too large")) {
			return "", &provider.Error{Kind: pe.Kind, Status: pe.Status, Msg: pe.Msg, Err: batch.ErrTooLarge}
		}
		return "", err
	}
	if mb.ID == "" {
		return "", &provider.Error{Kind: provider.Malformed, Msg: "creating the message batch gave no id"}
	}
	return mb.ID, nil
}

// findWindow is how long before and after the stored time of sending a
// batch Find looks: the time is stored before the request goes out, and a
// large batch takes a while to send.
const findWindow = 15 * time.Minute

// Find looks through the workspace's recent message batches (newest
// first) for one sent by this batch's request: created within findWindow
// of the stored time, with as many requests, and not another batch of the
// run. A candidate that has ended is confirmed by the custom ids of its
// results; one still running is taken only when it is the one candidate.
func (b *Batch) Find(ctx context.Context, q batch.Lookup) (string, error) {
	if q.Submitted.IsZero() || len(q.CustomIDs) == 0 {
		return "", nil
	}
	ours := make(map[string]bool, len(q.CustomIDs))
	for _, id := range q.CustomIDs {
		ours[id] = true
	}
	var running []string
	after := ""
	for page := 0; page < 50; page++ {
		var list struct {
			Data    []an.MessageBatch `json:"data"`
			HasMore bool              `json:"has_more"`
			LastID  string            `json:"last_id"`
		}
		path := "v1/messages/batches?limit=100"
		if after != "" {
			path += "&after_id=" + url.QueryEscape(after)
		}
		if err := b.call(ctx, &list, func(ctx context.Context, opts ...option.RequestOption) error {
			return b.client.Get(ctx, path, nil, nil, opts...)
		}); err != nil {
			return "", err
		}
		older := false
		for _, mb := range list.Data {
			if mb.CreatedAt.Before(q.Submitted.Add(-findWindow)) {
				older = true
				continue
			}
			c := mb.RequestCounts
			if q.Known[mb.ID] || mb.CreatedAt.After(q.Submitted.Add(findWindow)) ||
				int(c.Processing+c.Succeeded+c.Errored+c.Canceled+c.Expired) != len(q.CustomIDs) {
				continue
			}
			if mb.ProcessingStatus != an.MessageBatchProcessingStatusEnded {
				running = append(running, mb.ID)
				continue
			}
			if ok, err := b.holds(ctx, mb, ours); err != nil {
				return "", err
			} else if ok {
				return mb.ID, nil
			}
		}
		if older || !list.HasMore || len(list.Data) == 0 {
			break
		}
		after = list.LastID
		if after == "" {
			after = list.Data[len(list.Data)-1].ID
		}
	}
	if len(running) == 1 {
		return running[0], nil
	}
	return "", nil
}

// holds says whether an ended batch's first result is one of ours.
func (b *Batch) holds(ctx context.Context, mb an.MessageBatch, ours map[string]bool) (bool, error) {
	body, err := b.download(ctx, mb.ID, mb.ResultsURL)
	if err != nil {
		return false, err
	}
	defer body.Close()
	found := false
	err = batch.Lines(ctx, body, limits.MaxBatchResultLine, func(n int, raw []byte) error {
		var l resultLine
		if json.Unmarshal(raw, &l) == nil {
			found = ours[l.CustomID]
		}
		return errStop
	}, func(int, string) error { return errStop })
	if err != nil && !errors.Is(err, errStop) {
		return false, err
	}
	return found, nil
}

var errStop = errors.New("stop")

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

// Results streams an ended batch's results from its results_url (the
// API says the path may change), which must be on the endpoint's host.
func (b *Batch) Results(ctx context.Context, id string, fn func(batch.Result) error) error {
	var mb an.MessageBatch
	if err := b.call(ctx, &mb, func(ctx context.Context, opts ...option.RequestOption) error {
		return b.client.Get(ctx, "v1/messages/batches/"+id, nil, nil, opts...)
	}); err != nil {
		return err
	}
	body, err := b.download(ctx, id, mb.ResultsURL)
	if err != nil {
		return err
	}
	defer body.Close()
	return batch.ReadResults(ctx, body, "message batch "+id+" results", func(l *resultLine) string { return l.CustomID },
		func(l *resultLine) batch.Result { return b.result(ctx, *l) }, fn)
}

// download opens a batch's results_url; closing it ends the download.
func (b *Batch) download(ctx context.Context, id, resultsURL string) (io.ReadCloser, error) {
	if resultsURL == "" {
		return nil, &provider.Error{Kind: provider.Transient, Msg: fmt.Sprintf("message batch %s has ended without a results_url", id)}
	}
	u, err := url.Parse(resultsURL)
	base, berr := url.Parse(b.p.cfg.BaseURL)
	if err != nil || berr != nil || !u.IsAbs() || u.Scheme != base.Scheme || u.Host != base.Host {
		// The key goes only to the endpoint's own host.
		return nil, &provider.Error{Kind: provider.BadRequest, Msg: fmt.Sprintf("message batch %s: its results_url is not on the endpoint's host %s", id, base.Host)}
	}
	cctx, cancel := context.WithCancel(ctx)
	var res *http.Response
	err = b.client.Get(cctx, u.String(), nil, &res, option.WithHeader("Accept", "application/x-jsonl"))
	if err != nil {
		cancel()
		var ae *an.Error
		if errors.As(err, &ae) {
			return nil, b.p.api.Redact.Error(provider.ClassifyHTTP(provider.HTTPFailure{Status: ae.StatusCode, Message: ae.Error()}))
		}
		return nil, provider.ClassifyTransport(ctx, err)
	}
	return resultsBody{res.Body, cancel}, nil
}

// resultsBody is a results download: Close also cancels its request.
type resultsBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (d resultsBody) Close() error {
	err := d.ReadCloser.Close()
	d.cancel()
	return err
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
		r.Unrun = true
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

// Cleanup deletes an ended message batch and its results.
func (b *Batch) Cleanup(ctx context.Context, id string) error {
	var out an.DeletedMessageBatch
	err := b.call(ctx, &out, func(ctx context.Context, opts ...option.RequestOption) error {
		return b.client.Delete(ctx, "v1/messages/batches/"+id, nil, nil, opts...)
	})
	var pe *provider.Error
	if errors.As(err, &pe) && pe.Status == 404 {
		return nil
	}
	return err
}

// call makes one request with the exchange recorder installed and decodes
// its 2xx body into out.
func (b *Batch) call(ctx context.Context, out any, send func(ctx context.Context, opts ...option.RequestOption) error) error {
	return b.p.api.Fetch(ctx, "message batch API", out, func(ctx context.Context, x *provider.Exchange) error {
		return send(ctx, option.WithMiddleware(x.Middleware))
	})
}
