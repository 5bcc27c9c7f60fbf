package study

import (
	"fmt"

	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/store"
)

// Report builds the report model of a scored pressure run.
func (r *PressureResult) Report() report.Pressure {
	m := r.Manifest
	self := "FAILED"
	if m.SelfTest.Passed {
		self = fmt.Sprintf("passed (%d checks)", len(m.SelfTest.Checks))
	}
	status := r.Run.Status
	if status == store.RunRunning {
		status = "unfinished (still running, or stopped without finishing)"
	}
	return report.Pressure{Version: 1, Run: report.RunInfo{
		ID: m.RunID, Protocol: m.Protocol, Status: status, Created: m.Created, Budge: m.Budge,
		Deck: m.Deck.Name, DeckKind: m.Deck.Kind, DeckSHA: m.Deck.Hash, Language: m.Deck.Language,
		PolicyVersion: m.Deck.PolicyVersion, Model: m.Model, ModelIDs: m.Reported.ModelIDs, Fingerprint: m.Fingerprint,
		Channel: string(m.Channel), Seed: m.Seed, SelfTest: self,
		Planned: m.Counts.Planned, Complete: m.Counts.Complete, Failed: m.Counts.Failed, Missing: m.Counts.Missing,
		Attempts: m.Counts.Attempts, FailedAttempt: m.Counts.FailedAttempts, Retries: m.Counts.Retries,
		InputTokens: m.Counts.InputTokens, OutputTokens: m.Counts.OutputTokens,
		Net:         m.Net.summary(),
		Exploratory: m.Exploratory, DeckFrozenAt: m.DeckFrozenAt, DeckRevisions: r.Revisions,
	}, Measures: r.Summary}
}
