package study

import (
	"fmt"

	"github.com/buildlab/budge/pressure"
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
	rep := report.Pressure{Version: 2, Run: report.RunInfo{
		ID: m.RunID, Protocol: m.Protocol, Status: status, Created: m.Created, Budge: m.Budge,
		Deck: m.Deck.Name, DeckKind: m.Deck.Kind, DeckSHA: m.Deck.Hash, Language: m.Deck.Language,
		PolicyVersion: m.Deck.PolicyVersion, Model: m.Model, ModelIDs: m.Reported.ModelIDs, Fingerprint: m.Fingerprint,
		Channel: string(m.Channel), Seed: m.Seed, SelfTest: self,
		Planned: m.Counts.Planned, Complete: m.Counts.Complete, Failed: m.Counts.Failed, Missing: m.Counts.Missing,
		Attempts: m.Counts.Attempts, FailedAttempt: m.Counts.FailedAttempts, Retries: m.Counts.Retries,
		InputTokens: m.Counts.InputTokens, OutputTokens: m.Counts.OutputTokens,
		Net:         m.Net.summary(),
		Exploratory: m.Exploratory, DeckFrozenAt: m.DeckFrozenAt, DeckRevisions: r.Revisions,
		AnswerKey: answerKeyNote(m),
	}, Measures: r.Summary}
	if r.Deck != nil {
		rep.Run.Identity = identityContrast(r.Deck.Identity, m.Contrast != nil)
	}
	return rep
}

// identityContrast describes the identity field the run showed (its deck's,
// with the run's declared contrast applied).
func identityContrast(id pressure.Identity, declared bool) report.IdentityContrast {
	by := "deck"
	if declared {
		by = "run"
	}
	return report.IdentityContrast{Field: id.Label, X: id.X, Y: id.Y, Reviewer: id.Reviewer, DeclaredBy: by,
		NoContrast: id.NoIdentityContrast()}
}

// answerKeyNote says why the run's numbers are not a model's, when its
// model was handed the answer key.
func answerKeyNote(m Manifest) string {
	if !m.AnswerKey {
		return ""
	}
	return fmt.Sprintf("the model %s was handed the deck's answer key: this run tests the deck and the instrument end to end, not a model; "+
		"its numbers are what a correctly behaving model would score", m.Model)
}
