package study

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/dataset"
	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/stats"
	"github.com/buildlab/budge/store"
)

// ImportOptions configure `budge framing import`.
type ImportOptions struct {
	Dir string // a folder of released per-item result files (one model)
	// Templates is the template directory the prompts were rendered with;
	// empty means DIR/../../prompts, where the release keeps them.
	Templates string
	// Model names the model that produced the results (default: the
	// folder's name).
	Model string
	// AllowPromptMismatch imports even when a recorded prompt differs from
	// budge's rendering (the mismatches are listed in the report).
	AllowPromptMismatch bool
	Policy              string
	Tolerant            bool
	Bootstrap           stats.Bootstrap
	Started             func(runID string)
}

// DefaultImportOptions: the release's own prompts, DialDefer's policy
// (unparseable counts as wrong), tolerant parsing, 10,000 resamples.
func DefaultImportOptions(dir string) ImportOptions {
	return ImportOptions{Dir: dir, Policy: framing.PolicyWrong, Tolerant: true, Bootstrap: stats.DefaultBootstrap(42)}
}

// importedMarker is the fingerprint of imported attempts: they were not
// made by budge.
const importedMarker = "imported"

// ImportFraming turns a released result folder into a normal framing run:
// it checks that every recorded prompt is byte-identical to budge's
// rendering with the given templates, stores each recorded conversation as
// a session, reads every recorded reply with budge's own parser and scores
// the run with budge's measures. Nothing is written unless every check
// passes.
func ImportFraming(ctx context.Context, st *store.Store, o ImportOptions) (*FramingResult, error) {
	files, err := dataset.ReadResults(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	tdir := o.Templates
	if tdir == "" {
		tdir = filepath.Join(o.Dir, "..", "..", "prompts")
		if _, err := os.Stat(filepath.Join(tdir, framing.StatementFile)); err != nil {
			return nil, fmt.Errorf("%w: no templates given and none at %s; pass --templates DIR (the folder with %s and %s the results were made with)",
				ErrInvalid, tdir, framing.StatementFile, framing.DialogueFile)
		}
	}
	tmpl, err := framing.OpenTemplates(tdir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	model := o.Model
	if model == "" {
		abs, _ := filepath.Abs(o.Dir)
		model = filepath.Base(abs)
	}
	d := framing.DefaultDesign()
	d.Templates = []*framing.Templates{tmpl}
	d.Policy, d.Tolerant = o.Policy, o.Tolerant
	if errs := d.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrInvalid, strings.Join(errs, "; "))
	}
	check := &framing.ImportCheck{Source: o.Dir, Files: len(files)}
	var items []framing.Item
	var recs []*dataset.ResultRecord
	where := map[string]string{}
	var labels *framing.LabelSet
	var roles string
	for fi := range files {
		f := &files[fi]
		for ri := range f.Records {
			r := &f.Records[ri]
			if prev, dup := where[r.Item.ID]; dup {
				return nil, fmt.Errorf("%w: %s:%d: id %q is also in %s", ErrInvalid, f.Path, r.Line, r.Item.ID, prev)
			}
			where[r.Item.ID] = f.Path
			if r.Item.Dialogue == nil {
				if labels == nil {
					l := r.Labels
					labels = &l
				} else if r.Labels.Speaker1 != labels.Speaker1 || r.Labels.Speaker2 != labels.Speaker2 {
					return nil, fmt.Errorf("%w: %s:%d: speaker labels %s/%s differ from %s/%s in the same import; import label ablations one folder at a time",
						ErrInvalid, f.Path, r.Line, r.Labels.Speaker1, r.Labels.Speaker2, labels.Speaker1, labels.Speaker2)
				}
			} else if r.Judger != "" {
				if roles != "" && roles != r.Judger {
					return nil, fmt.Errorf("%w: %s:%d: judger %s differs from %s in the same import", ErrInvalid, f.Path, r.Line, r.Judger, roles)
				}
				roles = r.Judger
				d.Reverse = r.Judger == r.Item.Dialogue.Speakers[0]
			}
			items = append(items, r.Item)
			recs = append(recs, r)
			check.Records++
		}
	}
	if labels != nil {
		d.Labels = []framing.LabelSet{*labels}
		if l, err := framing.ParseLabels(labels.Speaker1 + "/" + labels.Speaker2); err == nil {
			d.Labels[0].Name = l.Name
			if labels.Speaker1 == "Speaker 1" && labels.Speaker2 == "Speaker 2" {
				d.Labels[0].Name = framing.DefaultLabels().Name
			}
		}
	}
	specs := framing.Plan(&d, items)
	now := time.Now()
	var sessions []store.Session
	for seq, spec := range specs {
		it := &items[spec.Index]
		a := recs[spec.Index].Answers[spec.Condition]
		check.Answers++
		se := store.Session{ID: spec.ID(), Seq: seq, SchedulePos: seq, Status: store.SessionComplete, Started: now, Finished: now,
			Artifacts: map[string]store.Blob{}}
		put := func(b []byte) string {
			id, blob := store.Pack(b)
			se.Artifacts[id] = blob
			return id
		}
		if a.HasTranscript {
			_, want, err := d.Messages(spec, it)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
			}
			check.PromptsChecked++
			if want == a.Prompt {
				check.PromptsIdentical++
			} else {
				check.PromptMismatches = append(check.PromptMismatches, fmt.Sprintf("%s (%s)", spec.ID(), firstDifference(want, a.Prompt)))
			}
			var msgs []chat.Message
			if a.System != "" {
				msgs = append(msgs, chat.Message{Role: chat.System, Content: a.System})
			}
			msgs = append(msgs, chat.Message{Role: chat.User, Content: a.Prompt})
			reply := chat.Message{Role: chat.Assistant, Content: a.Reply}
			for _, m := range msgs {
				se.Messages = append(se.Messages, chat.Entry{Phase: framing.PhaseJudgment, Message: m})
			}
			se.Messages = append(se.Messages, chat.Entry{Phase: framing.PhaseJudgment, Message: reply})
			check.RepliesParsed++
			if got := framing.ParseAnswer(a.Reply, d.Tolerant); got.Choice == a.Choice {
				check.ParserAgrees++
			} else {
				check.ParserDisagrees = append(check.ParserDisagrees, fmt.Sprintf("%s: budge reads %q, the release recorded %q", spec.ID(), got.Choice, a.Choice))
			}
			reqBody, _ := json.Marshal(chat.Request{Model: model, Messages: msgs})
			respBody, _ := json.Marshal(chat.Response{Message: reply, Meta: chat.Meta{Provider: importedMarker, ModelID: model}})
			se.Attempts = []store.Attempt{{Incarnation: 1, Call: 1, Attempt: 1, Phase: framing.PhaseJudgment, Started: now, Outcome: "ok",
				RequestSHA: put(reqBody), ResponseSHA: put(respBody), ModelID: model, Fingerprint: importedMarker}}
		} else {
			spec.Recorded = &framing.Recorded{Choice: a.Choice, Reasoning: a.Reasoning, Source: "recorded-answer"}
			check.RecordedOnly++
			se.Attempts = []store.Attempt{}
		}
		specJSON, _ := json.Marshal(spec)
		se.Spec = specJSON
		trace, _ := json.Marshal(struct {
			ID       string          `json:"session_id"`
			Spec     json.RawMessage `json:"spec"`
			Imported string          `json:"imported_from"`
			Attempts []store.Attempt `json:"attempts"`
		}{se.ID, se.Spec, o.Dir, se.Attempts})
		se.TraceSHA = put(trace)
		sessions = append(sessions, se)
	}
	if check.RecordedOnly > 0 {
		check.RecordedOnlyNote = "the release withheld these conversations: their prompts cannot be checked and their answers are the release's own parse, scored as recorded"
	}
	if len(check.PromptMismatches) > 0 && !o.AllowPromptMismatch {
		return nil, fmt.Errorf("%w: %d of %d recorded prompts differ from budge's rendering with the templates in %s, e.g. %s; check --templates, or pass --allow-prompt-mismatch to import anyway",
			ErrInvalid, len(check.PromptMismatches), check.PromptsChecked, tdir, strings.Join(head(check.PromptMismatches, 3), "; "))
	}
	p, err := newFramingRun(o.Dir, d, items, o.Bootstrap)
	if err != nil {
		return nil, err
	}
	m := p.m
	m.Model = model
	m.Provider = provider.Info{Name: importedMarker, Model: model, Detail: "results imported from " + o.Dir}
	m.SeedPolicy = "imported: the release's own generation settings"
	m.Import = check
	m.Counts.Planned = len(specs)
	m.Fingerprint = m.fingerprint()
	lease, err := create(ctx, st, p, o.Started)
	if err != nil {
		return nil, err
	}
	defer lease.Release()
	for i := 0; i < len(sessions); i += 512 {
		if err := st.WriteSessions(ctx, m.RunID, sessions[i:min(i+512, len(sessions))]); err != nil {
			return nil, err
		}
	}
	run, err := st.GetRun(ctx, m.RunID)
	if err != nil {
		return nil, err
	}
	for i := range sessions {
		sessions[i].Artifacts = nil
	}
	return as[*FramingResult](finish(ctx, st, p, run, sessions, nil))
}

// firstDifference describes where two texts first differ.
func firstDifference(want, got string) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	ctx := func(s string) string {
		end := min(i+30, len(s))
		return fmt.Sprintf("%q", s[max(0, i-10):end])
	}
	return fmt.Sprintf("first difference at byte %d: budge renders %s, the record holds %s", i, ctx(want), ctx(got))
}
