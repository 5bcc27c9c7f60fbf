package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	an "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
)

// DefaultBaseURL is Anthropic's API.
const DefaultBaseURL = "https://api.anthropic.com"

// Config says which endpoint to talk to and how.
type Config struct {
	Label   string // the model as the user named it ("anthropic:claude-...")
	Model   string // the model id sent
	BaseURL string // DefaultBaseURL when empty
	// APIKey is sent as x-api-key. It is never logged, and it is redacted
	// from every error and response, even one that echoes it.
	APIKey     string
	Format     Format
	Timeout    time.Duration // one call (0: 5 minutes)
	HTTPClient *http.Client  // tests
	MaxConns   int
	// KeyVar names the environment variable the key is read from (for the
	// preflight's advice).
	KeyVar string
	// Secrets are other secret values (every key the process holds) to take
	// out of whatever the provider returns, besides APIKey.
	Secrets []string
	// MaxBody is the largest response body accepted
	// (provider.DefaultMaxBody when 0).
	MaxBody int64
	// Budget bounds the response bytes in flight (provider.ResponseBudget()
	// when nil: one budget for the whole process).
	Budget *provider.Budget
}

// Provider is Anthropic's Messages API.
type Provider struct {
	cfg  Config
	svc  an.MessageService
	opts []option.RequestOption
	api  provider.API
	info provider.Info
	// safeURL is the base URL without credentials or query.
	safeURL string
}

// New returns a provider. It reads no environment: the key comes in cfg.
func New(cfg Config) (*Provider, error) {
	if cfg.Model == "" {
		return nil, fmt.Errorf("anthropic: no model name")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	u, ok := provider.BaseURL(cfg.BaseURL)
	if !ok {
		return nil, fmt.Errorf("anthropic: base URL must be an http(s) URL")
	}
	if errs := cfg.Format.Validate(); len(errs) > 0 {
		return nil, errs[0]
	}
	opts := []option.RequestOption{option.WithoutEnvironmentDefaults(), option.WithBaseURL(strings.TrimSuffix(cfg.BaseURL, "/") + "/"),
		option.WithHTTPClient(provider.HTTPClient(cfg.HTTPClient, cfg.MaxConns)), option.WithMaxRetries(0)}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	p := &Provider{cfg: cfg, svc: an.NewMessageService(opts...), opts: opts,
		api: provider.API{ErrorBody: ErrorBody, Decode: Decode, RequestIDHeader: "Request-Id",
			Redact: provider.NewRedactor(cfg.APIKey).With(cfg.Secrets...), Timeout: cfg.Timeout,
			MaxBody: cfg.MaxBody, Budget: cfg.Budget}}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	p.safeURL = strings.TrimSuffix(u.String(), "/")
	detail, _ := json.Marshal(struct {
		BaseURL string `json:"base_url"`
		Format  Format `json:"format"`
		Seed    string `json:"seed"`
	}{u.String(), cfg.Format, "not supported by the API; recorded, not sent"})
	label := cfg.Label
	if label == "" {
		label = "anthropic:" + cfg.Model
	}
	p.info = provider.Info{Name: "anthropic", Model: label, Tools: true, Detail: string(detail)}
	return p, nil
}

// Info describes the endpoint for the run fingerprint.
func (p *Provider) Info() provider.Info { return p.info }

// Chat sends one Messages request.
func (p *Provider) Chat(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	r := *req
	r.Model = p.cfg.Model
	params, extra, err := Params(&r, p.cfg.Format)
	if err != nil {
		return nil, &provider.Error{Kind: provider.BadRequest, Msg: err.Error()}
	}
	return p.api.Call(ctx, p.send(params, extra))
}

// send is a Messages request of params (with the extra body fields) made
// through an exchange recorder.
func (p *Provider) send(params an.MessageNewParams, extra map[string]any) func(ctx context.Context, x *provider.Exchange) error {
	return func(ctx context.Context, x *provider.Exchange) error {
		var raw []byte
		opts := []option.RequestOption{option.WithMiddleware(x.Middleware), option.WithResponseBodyInto(&raw)}
		for k, v := range extra {
			opts = append(opts, option.WithJSONSet(k, v))
		}
		_, err := p.svc.New(ctx, params, opts...)
		return err
	}
}

// Preflight asks the endpoint about the model before a run: the model's
// page (GET /v1/models/MODEL), then, when that does not know it, one
// Messages call of a few tokens.
func (p *Provider) Preflight(ctx context.Context) error {
	base := p.safeURL
	models := an.NewModelService(p.opts...)
	return provider.Check{API: "Anthropic", URL: base, Model: p.cfg.Model, KeyVar: p.cfg.KeyVar, HasKey: p.cfg.APIKey != "",
		LookupName: "GET " + base + "/v1/models/" + p.cfg.Model, ChatName: "POST " + base + "/v1/messages",
		Lookup: func(ctx context.Context) (provider.Answer, bool, []string, bool) {
			a := p.api.Probe(ctx, func(ctx context.Context, x *provider.Exchange) error {
				var raw []byte
				_, err := models.Get(ctx, p.cfg.Model, an.ModelGetParams{}, option.WithMiddleware(x.Middleware), option.WithResponseBodyInto(&raw))
				return err
			})
			if a.Err != nil {
				return a, false, nil, false
			}
			var m struct {
				ID string `json:"id"`
			}
			ok := json.Unmarshal(a.Body, &m) == nil && m.ID != ""
			return a, ok, nil, ok
		},
		Chat: func(ctx context.Context) provider.Answer {
			params, extra, err := Params(&chat.Request{Model: p.cfg.Model, Messages: []chat.Message{{Role: chat.User, Content: "Reply with the word OK."}},
				Settings: chat.Settings{MaxTokens: 16}}, p.cfg.Format)
			if err != nil {
				return provider.Answer{Err: &provider.Error{Kind: provider.BadRequest, Msg: err.Error()}}
			}
			a := p.api.Probe(ctx, p.send(params, extra))
			if a.Err == nil {
				if _, err := Decode(a.Body); err != nil {
					a.Err = &provider.Error{Kind: provider.Malformed, Status: a.Status, Msg: err.Error()}
				}
			}
			return a
		},
	}.Run(ctx)
}
