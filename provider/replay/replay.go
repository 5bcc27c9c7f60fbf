// Package replay answers requests from recorded responses instead of a
// model: Provider replays a finished run from the store, so that a changed
// checker or report can be applied to old data with zero network calls;
// Cache records every answer on disk, keyed by the full request and the
// repeat index, and answers a request it has seen from there.
//
// A replayed request matches a recorded one only when it is the same
// request, byte for byte: the same deck, prompt, model name, tools,
// settings and seed. Anything else is not_recorded, never a guess.
package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/anthropic"
	"github.com/buildlab/budge/provider/openai"
	"github.com/buildlab/budge/store"
)

// Body formats of stored responses.
const (
	FormatChat      = "chat"      // budge's neutral chat.Response JSON (in-process providers)
	FormatOpenAI    = "openai"    // a chat completion body
	FormatAnthropic = "anthropic" // a Messages API body
)

// FormatOf names the body format a provider's responses are stored in.
func FormatOf(providerName string) string {
	switch providerName {
	case "openai", "openai-compatible", "ollama", "openrouter":
		return FormatOpenAI
	case "anthropic":
		return FormatAnthropic
	}
	return FormatChat
}

// Decoder turns a stored response body into a response.
type Decoder func(body []byte) (*chat.Response, error)

// DecoderFor returns the decoder of a body format.
func DecoderFor(format string) (Decoder, error) {
	switch format {
	case FormatOpenAI:
		return openai.Decode, nil
	case FormatAnthropic:
		return anthropic.Decode, nil
	case FormatChat, "":
		return func(b []byte) (*chat.Response, error) {
			var r chat.Response
			if err := json.Unmarshal(b, &r); err != nil {
				return nil, err
			}
			return &r, nil
		}, nil
	}
	return nil, fmt.Errorf("replay: unknown stored body format %q", format)
}

// Provider answers from the stored responses of one run.
type Provider struct {
	st      store.AnswerReader
	runID   string
	answers map[string]store.Attempt
	decode  Decoder
	info    provider.Info
	served  atomic.Int64
	missed  atomic.Int64
}

// New loads the index of a stored run's answers (a *store.Store holds
// them). info describes the replayed model; its Model must be the model
// name of the recorded run, as requests carry it.
func New(ctx context.Context, st store.AnswerReader, runID, format string, info provider.Info) (*Provider, error) {
	dec, err := DecoderFor(format)
	if err != nil {
		return nil, err
	}
	answers, err := st.Responses(ctx, runID)
	if err != nil {
		return nil, err
	}
	if len(answers) == 0 {
		return nil, fmt.Errorf("replay: run %s has no recorded answers", runID)
	}
	info.Name, info.InProcess = "replay", true
	d, _ := json.Marshal(map[string]string{"replay_of": runID, "body_format": format, "recorded_detail": info.Detail})
	info.Detail = string(d)
	return &Provider{st: st, runID: runID, answers: answers, decode: dec, info: info}, nil
}

// Info describes the replay.
func (p *Provider) Info() provider.Info { return p.info }

// Counts returns how many requests were answered and how many had no
// recorded answer.
func (p *Provider) Counts() (served, missed int64) { return p.served.Load(), p.missed.Load() }

// Chat answers with the recorded response to the identical request.
func (p *Provider) Chat(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, &provider.Error{Kind: provider.Canceled, Err: err}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, &provider.Error{Kind: provider.BadRequest, Msg: err.Error()}
	}
	sum := sha256.Sum256(body)
	a, ok := p.answers[hex.EncodeToString(sum[:])]
	if !ok {
		p.missed.Add(1)
		return nil, &provider.Error{Kind: provider.NotRecorded,
			Msg: "run " + p.runID + " has no answer to this request (the deck, prompt, model name, settings or seed differ from the recorded run)"}
	}
	raw, err := p.st.Artifact(ctx, p.runID, a.ResponseSHA)
	if err != nil {
		return nil, &provider.Error{Kind: provider.NotRecorded, Msg: err.Error()}
	}
	resp, err := p.decode(raw)
	if err != nil {
		return nil, &provider.Error{Kind: provider.NotRecorded, Msg: "stored response does not decode: " + err.Error()}
	}
	// The metadata of the recorded call, as stored with its attempt.
	resp.Meta.ModelID, resp.Meta.Fingerprint, resp.Meta.RequestID = a.ModelID, a.Fingerprint, a.RequestID
	resp.FinishReason = a.FinishReason
	resp.Usage = chat.Usage{InputTokens: a.InputTokens, OutputTokens: a.OutputTokens}
	resp.Raw = raw
	p.served.Add(1)
	return resp, nil
}
