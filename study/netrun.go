package study

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/provider/replay"
	"github.com/buildlab/budge/runner"
	"github.com/buildlab/budge/store"
)

// ErrCostLimit means the projected cost of a run exceeds --max-cost, and
// nothing was run.
var ErrCostLimit = errors.New("projected cost exceeds the limit")

// NetInfo is what a run records about talking to a model that is not in
// process, about its cost, and about how it was resumed or replayed.
type NetInfo struct {
	// BodyFormat is how response artifacts are written (chat, openai,
	// anthropic): what a replay decodes.
	BodyFormat string          `json:"response_body_format"`
	Price      *endpoint.Price `json:"price_per_mtok,omitempty"`
	MaxCost    float64         `json:"max_cost,omitempty"`
	Projected  *Projection     `json:"projected,omitempty"`
	// CostUSD is the stored sessions' tokens at Price.
	CostUSD *float64 `json:"cost_usd,omitempty"`
	// FailedByKind counts failed attempts by error kind.
	FailedByKind map[string]int `json:"failed_attempts_by_kind,omitempty"`
	// StoppedBy says why sessions were left unstarted ("cost limit").
	StoppedBy string `json:"stopped_by,omitempty"`
	ReplayOf  string `json:"replay_of,omitempty"`
	// AppPrompt is the application prompt's text when it came from a file,
	// so that a resume or a replay asks exactly the same questions.
	AppPrompt string     `json:"application_prompt,omitempty"`
	Cache     *CacheInfo `json:"cache,omitempty"`
	Adaptive  *AdaptInfo `json:"adaptive_concurrency,omitempty"`
	Resumes   []Resume   `json:"resumes,omitempty"`
}

// Projection is the cost a run is expected to have, and how it was guessed.
type Projection struct {
	Sessions     int     `json:"sessions"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	Cost         float64 `json:"cost_usd"`
	Assumptions  string  `json:"assumptions"`
}

// CacheInfo describes the response cache of a run.
type CacheInfo struct {
	Dir    string `json:"dir"`
	Hits   int64  `json:"hits"`
	Misses int64  `json:"misses"`
}

// AdaptInfo describes how concurrency adapted to rate limiting.
type AdaptInfo struct {
	Lowest int `json:"lowest_calls_in_flight"`
	Cuts   int `json:"cuts"`
}

// Resume records one resumption of a run.
type Resume struct {
	At       time.Time `json:"at"`
	Budge    string    `json:"budge_version"`
	Sessions int       `json:"sessions_run"`
	Provider string    `json:"provider_detail,omitempty"` // when it differs from the original (a new base URL)
}

// DeckSnapshot is a deck as recorded in the store, for replays.
type DeckSnapshot struct {
	Deck  *pressure.Deck
	Bytes []byte
}

// inProcess says whether a provider runs in budge's own process: no network,
// so no adaptive concurrency.
func inProcess(info provider.Info) bool { return info.Name == "sim" || info.Name == "replay" }

// netRun is the network side of one run: what prepareNet set up and
// finishNet reads back.
type netRun struct {
	adapt  *runner.Adaptive
	budget *runner.Budget
	cache  *replay.Cache
}

// prepareNet sets up what a run of either protocol needs beyond the
// protocol: the price and the cost limit (refusing a run whose projected
// cost exceeds it), the response cache, adaptive concurrency, and the
// manifest's record of them. project estimates the run's cost at a price.
func prepareNet(o NetOptions, concurrency int, n *NetInfo, model string, settings chat.Settings, p provider.Provider, project func(endpoint.Price) Projection) (provider.Provider, *netRun, error) {
	info := p.Info()
	nr := &netRun{}
	if n.BodyFormat == "" {
		n.BodyFormat = replay.FormatOf(info.Name)
	}
	cfg := o.Endpoint.Config
	if price, ok := cfg.PriceOf(model); ok && info.Name != "replay" && (cfg.HasPrice(model) || o.MaxCost > 0) {
		n.Price = &price
	}
	if o.MaxCost > 0 {
		if n.Price == nil {
			return nil, nil, fmt.Errorf("%w: --max-cost needs a price for %s: add it under prices in the config file (US dollars per million tokens)", ErrInvalid, model)
		}
		proj := project(*n.Price)
		n.MaxCost, n.Projected = o.MaxCost, &proj
		if proj.Cost > o.MaxCost {
			return nil, nil, fmt.Errorf("%w: %w: %d sessions of %s are projected to cost $%.4f (%d input and %d output tokens at $%g/$%g per million; %s), more than --max-cost $%g",
				ErrInvalid, ErrCostLimit, proj.Sessions, model, proj.Cost, proj.InputTokens, proj.OutputTokens, n.Price.Input, n.Price.Output, proj.Assumptions, o.MaxCost)
		}
		nr.budget = &runner.Budget{Limit: o.MaxCost, PerSession: proj.Cost / float64(max(proj.Sessions, 1)), MaxOutput: maxOutput(settings), Price: n.Price.Cost}
	}
	if o.CacheDir != "" {
		c, err := replay.NewCache(o.CacheDir, p)
		if err != nil {
			return nil, nil, err
		}
		nr.cache, p = c, c
		n.Cache = &CacheInfo{Dir: o.CacheDir}
	}
	if !inProcess(info) {
		nr.adapt = runner.NewAdaptive(concurrency)
	}
	return p, nr, nil
}

// maxOutput is the most output tokens one call can produce, for the cost
// limit's worst case.
func maxOutput(s chat.Settings) int {
	if s.MaxTokens > 0 {
		return s.MaxTokens
	}
	return 4096
}

// finishNet records what the run's network side saw.
func finishNet(n *NetInfo, nr *netRun, stats runner.Stats) {
	if nr == nil {
		return
	}
	n.StoppedBy = stats.StoppedBy
	if nr.cache != nil && n.Cache != nil {
		n.Cache.Hits, n.Cache.Misses = nr.cache.Counts()
	}
	if nr.adapt != nil {
		n.Adaptive = &AdaptInfo{Lowest: stats.LowestConcurrency, Cuts: stats.ConcurrencyCuts}
	}
}

// netCounts adds what score does not count itself: failed attempts by
// kind, and the cost of the tokens at the run's price.
func netCounts(n *NetInfo, c Counts, sessions []store.Session) {
	n.FailedByKind = nil
	for i := range sessions {
		for _, a := range sessions[i].Attempts {
			if a.Outcome != "ok" {
				if n.FailedByKind == nil {
					n.FailedByKind = map[string]int{}
				}
				n.FailedByKind[a.ErrorKind]++
			}
		}
	}
	n.CostUSD = nil
	if n.Price != nil {
		cost := n.Price.Cost(c.InputTokens, c.OutputTokens)
		n.CostUSD = &cost
	}
}

// projectSessions estimates the tokens and cost of n sessions: every
// session's first request is measured (about 4 characters a token), each
// later call carries the conversation so far plus about 150 tokens a turn,
// and every call is assumed to produce 120 output tokens (or max tokens,
// if lower). session gives a session's first request and its calls.
func projectSessions(n int, settings chat.Settings, price endpoint.Price, session func(i int) (first any, calls int, ok bool)) Projection {
	perAnswer := 120
	if settings.MaxTokens > 0 && settings.MaxTokens < perAnswer {
		perAnswer = settings.MaxTokens
	}
	const perTurn = 150
	var in, out int
	for i := range n {
		first, calls, ok := session(i)
		if !ok {
			continue
		}
		b, _ := json.Marshal(first)
		base := len(b) / 4
		for k := range calls {
			in += base + k*perTurn
			out += perAnswer
		}
	}
	return Projection{Sessions: n, InputTokens: in, OutputTokens: out, Cost: price.Cost(in, out),
		Assumptions: fmt.Sprintf("first requests measured at 4 characters a token, %d tokens added per turn, %d output tokens per call", perTurn, perAnswer)}
}

// project estimates a pressure run's cost (projectSessions).
func project(deck *pressure.Deck, specs []pressure.Spec, ch pressure.Channel, model string, settings chat.Settings, prompt string, price endpoint.Price) Projection {
	return projectSessions(len(specs), settings, price, func(i int) (any, int, bool) {
		s, err := pressure.NewSession(deck, specs[i], ch, model, settings, prompt)
		if err != nil {
			return nil, 0, false
		}
		return s.Next(), callsPerSession(specs[i].Branch, ch), true
	})
}

// callsPerSession is how many calls a session of a branch makes when the
// model behaves: one answer per phase, plus a registry read before each
// answer that needs one in the tool channel.
func callsPerSession(b pressure.Branch, ch pressure.Channel) int {
	n := 1
	if ch == pressure.ToolChannel {
		n++
	}
	switch b {
	case pressure.NoFollowUp:
	case pressure.Correction:
		n++
		if ch == pressure.ToolChannel {
			n++
		}
	default:
		n++
	}
	return n
}

// sortedKinds lists a count map's keys in order.
func sortedKinds(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// projectFraming estimates a framing run's cost (projectSessions): one
// call per session, plus one per challenge turn.
func projectFraming(d *framing.Design, specs []framing.Spec, items []framing.Item, model string, settings chat.Settings, price endpoint.Price) Projection {
	return projectSessions(len(specs), settings, price, func(i int) (any, int, bool) {
		s, err := framing.NewSession(d, specs[i], &items[specs[i].Index], model, settings)
		if err != nil {
			return nil, 0, false
		}
		return s.Next(), 1 + len(d.Challenges), true
	})
}
