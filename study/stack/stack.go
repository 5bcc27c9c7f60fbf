// Package stack is the one place a run's model is wrapped for execution:
// the opened endpoint (or a replay of recorded responses) goes behind the
// run's journal of answers, the response cache, then adaptive
// concurrency, then the cost budget. Every
// run of every protocol, new or resumed, is built here, so a capability
// added to one reaches all.
package stack

import (
	"context"
	"errors"

	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/batch"
	"github.com/buildlab/budge/provider/replay"
	"github.com/buildlab/budge/runner"
	"github.com/buildlab/budge/store"
)

// Options say which layers a run gets.
type Options struct {
	// CacheDir, when set, answers repeated requests from a response cache
	// there and records new answers.
	CacheDir string
	// JournalDir, when set, is the run's own journal of answers: every
	// answer of a model that is not in process is written there before it
	// is used, and a request already answered there (by a try of the run
	// that was killed before it stored the session) is answered from it,
	// so a resume never pays for a call twice.
	JournalDir string
	// Concurrency is the most calls in flight; a model that is not in
	// process gets adaptive concurrency starting there.
	Concurrency int
	// Budget, when set, stops starting sessions before the running cost
	// would pass its limit.
	Budget *runner.Budget
	// Pace, when set, holds calls to a number per second.
	Pace *runner.Pace
	// Batch, when set, sends the run's calls through the provider's batch
	// API, one turn per wave (provider/batch). It needs JournalDir: the
	// journal is where collected answers wait for their sessions.
	Batch *Batch
}

// Batch is how a run's calls go through a batch API.
type Batch struct {
	RunID  string
	API    batch.API
	Ledger batch.Ledger
	Notify func(batch.Event)
	// KeepFiles keeps what collected batches leave at the provider
	// (batch.Config.KeepFiles).
	KeepFiles bool
}

// Stack is a model ready to run, with the layers that report back what they
// saw.
type Stack struct {
	Provider provider.Provider
	Cache    *replay.Cache    // nil without a cache
	Journal  *replay.Journal  // nil for a model in process or without a journal
	Adapt    *runner.Adaptive // nil for a model in process
	Budget   *runner.Budget   // nil without a cost limit
	Pace     *runner.Pace     // nil without a limit of calls per second
	Batch    *batch.Batcher   // nil unless the run goes through a batch API
}

// Build wraps p in the layers o asks for, in the one order every run uses.
func Build(p provider.Provider, o Options) (*Stack, error) {
	s := &Stack{Provider: p, Budget: o.Budget, Pace: o.Pace}
	info := p.Info() // before the layers: a cached endpoint is still remote
	if o.Batch != nil && o.JournalDir == "" {
		return nil, errors.New("a batch run needs a journal directory")
	}
	if o.Batch != nil || o.JournalDir != "" && !info.InProcess {
		j, err := replay.OpenJournal(o.JournalDir, p)
		if err != nil {
			return nil, err
		}
		s.Journal, s.Provider = j, j
	}
	if o.Batch != nil {
		s.Batch = batch.New(batch.Config{RunID: o.Batch.RunID, API: o.Batch.API, Info: info, Ledger: o.Batch.Ledger,
			Journal: s.Journal, Cap: o.Concurrency, SpoolDir: o.JournalDir, Notify: o.Batch.Notify, KeepFiles: o.Batch.KeepFiles})
		s.Provider = s.Batch
	}
	if o.CacheDir != "" {
		c, err := replay.NewCache(o.CacheDir, s.Provider)
		if err != nil {
			return nil, err
		}
		s.Cache, s.Provider = c, c
	}
	if !info.InProcess && s.Batch == nil {
		s.Adapt = runner.NewAdaptive(o.Concurrency)
	}
	return s, nil
}

// Close closes the files of the stack's journal.
func (s *Stack) Close() error {
	if s.Journal != nil {
		return s.Journal.Close()
	}
	return nil
}

// Config is the runner configuration of the stack's layers, added to c.
func (s *Stack) Config(c runner.Config) runner.Config {
	c.Adapt, c.Budget, c.Pace = s.Adapt, s.Budget, s.Pace
	if s.Batch != nil {
		// A pass of a batch run answers its sessions' calls from the
		// journal or parks them: a few hundred sessions in flight keep
		// the cores busy, and the wave, not the pass, holds the run's
		// concurrency (the most requests in one wave).
		c.Batch = true
		c.Concurrency = min(c.Concurrency, PassSessions)
	}
	return c
}

// PassSessions is the most sessions in flight in a pass of a batch run.
const PassSessions = 256

// Recorded answers from a stored run's recorded responses, with zero
// network calls (a replay). format is how the responses were written; ""
// guesses it from the recorded provider. It returns the format used.
func Recorded(ctx context.Context, src store.AnswerReader, runID, format string, recorded provider.Info) (provider.Provider, string, error) {
	if format == "" {
		format = BodyFormat(recorded)
	}
	p, err := replay.New(ctx, src, runID, format, recorded)
	return p, format, err
}

// BodyFormat is how the responses of a provider are recorded, so that a
// replay can decode them.
func BodyFormat(info provider.Info) string { return replay.FormatOf(info.Name) }
