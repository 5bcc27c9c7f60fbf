package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
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
	// APIKey is sent as x-api-key. It is never logged, stored or returned
	// in an error.
	APIKey     string
	Format     Format
	Timeout    time.Duration // one call (0: 5 minutes)
	HTTPClient *http.Client  // tests
	MaxConns   int
}

// Provider is Anthropic's Messages API.
type Provider struct {
	cfg    Config
	svc    an.MessageService
	redact provider.Redactor
	info   provider.Info
}

// New returns a provider. It reads no environment: the key comes in cfg.
func New(cfg Config) (*Provider, error) {
	if cfg.Model == "" {
		return nil, fmt.Errorf("anthropic: no model name")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("anthropic: base URL must be an http(s) URL")
	}
	if errs := cfg.Format.Validate(); len(errs) > 0 {
		return nil, errs[0]
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Minute
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = provider.NewHTTPClient(cfg.MaxConns)
	}
	opts := []option.RequestOption{option.WithoutEnvironmentDefaults(), option.WithBaseURL(strings.TrimSuffix(cfg.BaseURL, "/") + "/"),
		option.WithHTTPClient(hc), option.WithMaxRetries(0)}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	p := &Provider{cfg: cfg, svc: an.NewMessageService(opts...), redact: provider.NewRedactor(cfg.APIKey)}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
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
	cctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	var x provider.Exchange
	var raw []byte
	opts := []option.RequestOption{option.WithMiddleware(x.Middleware), option.WithResponseBodyInto(&raw)}
	for k, v := range extra {
		opts = append(opts, option.WithJSONSet(k, v))
	}
	_, sdkErr := p.svc.New(cctx, params, opts...)
	resp, perr := p.result(ctx, &x, sdkErr)
	if perr != nil {
		return nil, p.redact.Error(perr)
	}
	if id := x.Header.Get("Request-Id"); id != "" {
		resp.Meta.RequestID = id
	}
	return resp, nil
}

func (p *Provider) result(ctx context.Context, x *provider.Exchange, sdkErr error) (*chat.Response, *provider.Error) {
	if e := x.Failure(ctx, sdkErr, ErrorBody); e != nil {
		return nil, e
	}
	resp, err := Decode(x.Body)
	if err != nil {
		return nil, provider.Classify(ctx, err)
	}
	return resp, nil
}
