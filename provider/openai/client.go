package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
)

// Config says which endpoint to talk to and how.
type Config struct {
	// Name is the provider as recorded: "openai", "openai-compatible", "ollama".
	Name string
	// Label is the model as the user named it ("ollama:llama3.2").
	Label string
	// Model is the model id sent in every request.
	Model   string
	BaseURL string
	// APIKey is sent as a bearer token. It is never logged, and it is
	// redacted from every error and response, even one that echoes it.
	APIKey string
	Format Format
	// Tools says whether the endpoint can call tools.
	Tools bool
	// Timeout bounds one call (0: 5 minutes).
	Timeout time.Duration
	// HTTPClient replaces the default client (tests).
	HTTPClient *http.Client
	// KeyVar names the environment variable the key is read from (for the
	// preflight's advice).
	KeyVar string
	// MaxConns is the run's concurrency, to size the connection pool.
	MaxConns int
	// Secrets are other secret values (every key the process holds) to take
	// out of whatever the provider returns, besides APIKey.
	Secrets []string
	// MaxBody is the largest response body accepted
	// (provider.DefaultMaxBody when 0).
	MaxBody int64
	// AnswerKey says the model at the endpoint is handed the answer key of
	// the deck it answers (budge sim serve's sim:oracle): recorded in Info,
	// so the run's reports say so.
	AnswerKey bool
	// Budget bounds the response bytes in flight (provider.ResponseBudget()
	// when nil: one budget for the whole process).
	Budget *provider.Budget
}

// Provider is an OpenAI-compatible chat completions endpoint.
type Provider struct {
	cfg    Config
	client oa.Client
	api    provider.API
	info   provider.Info
}

// New returns a provider for the endpoint. It reads no environment: the key
// comes in cfg.
func New(cfg Config) (*Provider, error) {
	if cfg.Model == "" {
		return nil, fmt.Errorf("openai: no model name")
	}
	if _, ok := provider.BaseURL(cfg.BaseURL); !ok {
		return nil, fmt.Errorf("openai: base URL must be an http(s) URL, got %q", SafeURL(cfg.BaseURL))
	}
	if errs := cfg.Format.Validate(); len(errs) > 0 {
		return nil, errs[0]
	}
	if cfg.Name == "" {
		cfg.Name = "openai"
	}
	base := strings.TrimSuffix(cfg.BaseURL, "/") + "/"
	opts := []option.RequestOption{option.WithBaseURL(base), option.WithHTTPClient(provider.HTTPClient(cfg.HTTPClient, cfg.MaxConns)), option.WithMaxRetries(0)}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	// Not openai.NewClient: it reads OPENAI_* variables from the
	// environment, and budge reads the environment in one place.
	p := &Provider{cfg: cfg, client: oa.Client{Options: opts},
		api: provider.API{ErrorBody: ErrorBody, Decode: Decode, RequestIDHeader: "X-Request-Id",
			Redact: provider.NewRedactor(cfg.APIKey).With(cfg.Secrets...), Timeout: cfg.Timeout,
			MaxBody: cfg.MaxBody, Budget: cfg.Budget}}
	detail, _ := json.Marshal(struct {
		BaseURL string `json:"base_url"`
		Format  Format `json:"format"`
	}{SafeURL(cfg.BaseURL), cfg.Format})
	label := cfg.Label
	if label == "" {
		label = cfg.Name + ":" + cfg.Model
	}
	p.info = provider.Info{Name: cfg.Name, Model: label, Tools: cfg.Tools, Detail: string(detail), AnswerKey: cfg.AnswerKey}
	return p, nil
}

// Info describes the endpoint for the run fingerprint (no key, no URL secrets).
func (p *Provider) Info() provider.Info { return p.info }

// Chat sends one chat completion request.
func (p *Provider) Chat(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	r := *req
	r.Model = p.cfg.Model
	body, err := Body(&r, p.cfg.Format)
	if err != nil {
		return nil, &provider.Error{Kind: provider.BadRequest, Msg: err.Error()}
	}
	resp, err := p.api.Call(ctx, func(ctx context.Context, x *provider.Exchange) error {
		var raw []byte
		return p.client.Post(ctx, "chat/completions", json.RawMessage(body), &raw, option.WithMiddleware(x.Middleware))
	})
	if err != nil {
		return nil, err
	}
	resp.Meta.Provider = p.cfg.Name
	return resp, nil
}

// SafeURL returns a URL without user info or query, fit for the store.
func SafeURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparseable URL)"
	}
	u.User = nil
	u.RawQuery = ""
	u.Fragment = ""
	return u.String()
}

// Preflight asks the endpoint about the model before a run: its model
// listing (GET /models), then, when the listing does not name the model,
// one chat completion of a few tokens.
func (p *Provider) Preflight(ctx context.Context) error {
	return provider.Check{API: "OpenAI-compatible", URL: SafeURL(p.cfg.BaseURL), Model: p.cfg.Model, KeyVar: p.cfg.KeyVar, HasKey: p.cfg.APIKey != "",
		LookupName: "GET " + SafeURL(strings.TrimSuffix(p.cfg.BaseURL, "/")+"/models"),
		ChatName:   "POST " + SafeURL(strings.TrimSuffix(p.cfg.BaseURL, "/")+"/chat/completions"),
		Lookup: func(ctx context.Context) (provider.Answer, bool, []string, bool) {
			a := p.api.Probe(ctx, func(ctx context.Context, x *provider.Exchange) error {
				var raw []byte
				return p.client.Get(ctx, "models", nil, &raw, option.WithMiddleware(x.Middleware))
			})
			if a.Err != nil {
				return a, false, nil, false
			}
			var list struct {
				Data *[]struct {
					ID string `json:"id"`
				} `json:"data"`
			}
			if json.Unmarshal(a.Body, &list) != nil || list.Data == nil {
				return a, false, nil, false
			}
			var ids []string
			for _, m := range *list.Data {
				ids = append(ids, m.ID)
			}
			return a, slices.Contains(ids, p.cfg.Model), ids, true
		},
		Chat: func(ctx context.Context) provider.Answer {
			body, err := Body(&chat.Request{Model: p.cfg.Model, Messages: []chat.Message{{Role: chat.User, Content: "Reply with the word OK."}},
				Settings: chat.Settings{MaxTokens: 16}}, p.cfg.Format)
			if err != nil {
				return provider.Answer{Err: &provider.Error{Kind: provider.BadRequest, Msg: err.Error()}}
			}
			a := p.api.Probe(ctx, func(ctx context.Context, x *provider.Exchange) error {
				var raw []byte
				return p.client.Post(ctx, "chat/completions", json.RawMessage(body), &raw, option.WithMiddleware(x.Middleware))
			})
			if a.Err == nil {
				if _, err := Decode(a.Body); err != nil {
					a.Err = &provider.Error{Kind: provider.Malformed, Status: a.Status, Msg: err.Error()}
				}
			}
			return a
		},
	}.Run(ctx)
}
