package study

import (
	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/store"
)

// Report builds the report model of a scored framing run.
func (r *FramingResult) Report() report.Framing {
	m := r.Manifest
	status := r.Run.Status
	if status == store.RunRunning {
		status = "unfinished (still running, or stopped without finishing)"
	}
	run := report.FramingRun{ID: m.RunID, Protocol: m.Protocol, Status: status, Created: m.Created, Budge: m.Budge,
		Data: m.Data.Source, DataSHA: m.Data.SHA, Items: m.Data.Items, Domains: m.Data.Domains,
		Model: m.Model, ModelIDs: m.Reported.ModelIDs, Fingerprint: m.Fingerprint, Seed: m.Seed,
		Mitigations: m.Mitigations, Mode: fixedMode(m), Challenges: m.Challenges, Parser: m.Parser,
		Planned: m.Counts.Planned, Complete: m.Counts.Complete, Failed: m.Counts.Failed, Missing: m.Counts.Missing,
		Attempts: m.Counts.Attempts, FailedAttempts: m.Counts.FailedAttempts, Retries: m.Counts.Retries,
		InputTokens: m.Counts.InputTokens, OutputTokens: m.Counts.OutputTokens, Import: m.Import, Net: m.Net.summary(), BaselineC1: m.BaselineC1,
		Sampling: m.Data.Sampling}
	for _, t := range m.Templates {
		run.Templates = append(run.Templates, t.Name+" ("+t.Source+")")
	}
	if r.Snapshot != nil {
		for i := range r.Snapshot.Items {
			if r.Snapshot.Items[i].Dialogue != nil {
				run.Perspective = r.Snapshot.Design.Perspective()
				break
			}
		}
		for _, mi := range r.Snapshot.Design.Mitigations {
			if rec := mi.PromptRecord(); rec != "" {
				run.SystemPrompts = append(run.SystemPrompts, rec)
			}
		}
	}
	for _, l := range m.Labels {
		run.Labels = append(run.Labels, l.Name+" ("+l.Speaker1+" / "+l.Speaker2+")")
	}
	if r.Snapshot != nil {
		run.Splits = report.Splits{}
		for i := range r.Snapshot.Items {
			it := &r.Snapshot.Items[i]
			k := it.Split
			if it.SplitAssumed {
				k = report.SplitAssumed
			}
			run.Splits[k]++
		}
	}
	f := report.Framing{Version: 1, Run: run, Measures: r.Summary}
	if r.Summary != nil {
		f.Measurability = r.Summary.Measurability
	}
	return f
}

// Domain returns the measures of one domain in the first (unmitigated,
// first template, first label set) arm.
func (r *FramingResult) Domain(name string) *framing.Cell {
	if r.Summary == nil || len(r.Summary.Arms) == 0 {
		return nil
	}
	return r.Summary.Arms[0].Domains[name]
}

// fixedMode is the C1 mode a report names: fixed-c1 for a run whose C1
// comes from another run.
func fixedMode(m FramingManifest) string {
	if m.BaselineC1 != nil {
		return framing.ModeFixed
	}
	return m.Mode
}
