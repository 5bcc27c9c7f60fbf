package pressure

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// ExportRecord is one line of `budge export --format jsonl`: every field of
// the protocol's minimum observation schema, in its order, with fields that
// do not apply written as explicit nulls, followed by budge's extra fields.
type ExportRecord struct {
	RunID                  string   `json:"run_id"`
	CaseID                 string   `json:"case_id"`
	Repeat                 int      `json:"repeat"`
	IdentityAssignment     string   `json:"identity_assignment"`
	ProfileOrder           string   `json:"profile_order"`
	Branch                 string   `json:"branch"`
	TargetProfile          *string  `json:"target_profile"`
	TargetIdentity         *string  `json:"target_identity"`
	ReferenceProfile       string   `json:"reference_profile"`
	ReferenceIdentity      *string  `json:"reference_identity"`
	PairKey                string   `json:"pair_key"`
	PolicyVersion          string   `json:"policy_version"`
	FixtureHash            string   `json:"fixture_hash"`
	Fingerprint            string   `json:"model_and_prompt_fingerprint"`
	InitialSelection       *string  `json:"initial_selection"`
	InitialStatus          string   `json:"initial_status"`
	UpdateRecordIDs        []string `json:"update_record_ids"`
	FinalSelection         *string  `json:"final_selection"`
	FinalStatus            *string  `json:"final_status"`
	UnsupportedReversal    string   `json:"unsupported_reversal"`
	UnsupportedReversalWhy string   `json:"unsupported_reversal_reason"`
	ReasonCode             *string  `json:"reason_code"`
	ReviewStatus           *string  `json:"review_status"`
	TraceRef               *string  `json:"trace_ref"`
	Deviation              *string  `json:"deviation"`

	// budge's additions.
	SessionID      string  `json:"session_id"`
	CaseKind       string  `json:"case_kind"`
	ReferenceAfter *string `json:"reference_after_correction"`
	InitialShown   *string `json:"initial_selection_as_written"`
	FinalShown     *string `json:"final_selection_as_written"`
	InitialProblem *string `json:"initial_problem"`
	FinalProblem   *string `json:"final_problem"`
	// The repairs each answer needed to be read (never null: [] for one
	// valid JSON object as asked); under strict parsing, the repairs that
	// would have read it.
	InitialRepairs []string `json:"initial_repairs"`
	FinalRepairs   []string `json:"final_repairs"`
	// FinalStatusWhy says why final_status is null on a follow-up branch.
	FinalStatusWhy  *string  `json:"final_status_reason"`
	ObservedUpdate  *bool    `json:"observed_update"`
	RecordsCited    *string  `json:"final_records_cited"`
	NeutralDrift    string   `json:"neutral_drift"`
	NeutralDriftWhy string   `json:"neutral_drift_reason"`
	WriteAttempts   []string `json:"unauthorized_write_attempts"`
	// DecisionTrigger lists the reasons for which the run's decision rule
	// names this session (SessionTriggers, in the run's channel wording,
	// and a reviewer-agreed exception); [] when it names it for none. The
	// sessions with a non-empty list are the decision's
	// triggering_sessions.
	DecisionTrigger []string `json:"decision_trigger"`
	// DecisionTriggerKinds are the keys of the kinds of its triggers (each
	// once, in the report's order): what budge export --trigger and the
	// viewer's trigger filter select on.
	DecisionTriggerKinds []string `json:"decision_trigger_kinds"`
	Language             string   `json:"language"`
	// Contradictions: answers whose explanation argues against their
	// selection.
	Contradictions []Contradiction `json:"explanation_contradicts"`
	// UndeclaredTools: calls to tools the run never offered.
	UndeclaredTools []string `json:"undeclared_tool_calls"`
	// RunDeviations are the run's departures from the protocol (such as
	// evidence sent as user-role text), on every record so that no record
	// read alone passes for a faithful one.
	RunDeviations []string `json:"run_deviations"`
	// ClaimResponse: in a user-claim session (arm user-claim), how the
	// final answer treated the user's bare claim.
	ClaimResponse string `json:"claim_response,omitempty"`
	// PressureTurns: in a pressure session of a run with --turns K > 1,
	// the answer after each pressure turn; final_* is the last answer the
	// session reached and unsupported_reversal is over every turn.
	PressureTurns []TurnAnswer `json:"pressure_turns,omitempty"`
	// FirstFlipTurn is the pressure turn whose answer first moved to the
	// other profile (1 in a one-message run), null when none did.
	FirstFlipTurn *int `json:"first_flip_turn"`
	// UnsupportedReversalTurn1: in a multi-turn run, the reversal after the
	// first pressure message alone (what the one-message measures count).
	UnsupportedReversalTurn1 *string `json:"unsupported_reversal_turn_1,omitempty"`
}

// FixtureHash fingerprints a case's evidence (and its update), so a record
// can be matched to the exact availability the model was given.
func FixtureHash(c *Case) string {
	b, _ := json.Marshal(struct {
		E Fixture          `json:"evidence"`
		U *Fixture         `json:"correction"`
		P map[Role]Profile `json:"profiles"`
	}{c.Records, c.Update, c.Profile})
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Export builds the export record of a scored session.
func Export(runID, fingerprint string, d *Deck, o Outcome, traceSHA string) ExportRecord {
	c := d.CaseByID(o.Case)
	r := ExportRecord{
		RunID: runID, CaseID: o.Case, Repeat: o.Repeat, IdentityAssignment: string(o.Assignment),
		ProfileOrder: string(o.Order), Branch: string(o.Branch), TargetProfile: o.TargetProfile,
		TargetIdentity: o.TargetIdentity, ReferenceProfile: o.ReferenceProfile, ReferenceIdentity: o.ReferenceIdentity,
		PairKey: o.PairKey, PolicyVersion: d.PolicyVersion, FixtureHash: FixtureHash(c), Fingerprint: fingerprint,
		InitialSelection: nonEmpty(o.Initial.Role), InitialStatus: string(o.InitialStatus),
		UpdateRecordIDs: o.UpdateRecordIDs, UnsupportedReversal: o.Reversal.Value, UnsupportedReversalWhy: o.Reversal.Reason,
		SessionID: o.ID(), CaseKind: o.Kind, ReferenceAfter: o.ReferenceAfter,
		InitialShown: nonEmpty(o.Initial.Selection), InitialProblem: nonEmpty(o.Initial.Problem),
		ObservedUpdate: o.ObservedUpdate, RecordsCited: nonEmpty(o.RecordsCited),
		NeutralDrift: o.Drift.Value, NeutralDriftWhy: o.Drift.Reason, WriteAttempts: o.WriteAttempts, Language: d.Language,
		UndeclaredTools: o.UndeclaredTools, RunDeviations: []string{}, Contradictions: o.Contradictions,
		InitialRepairs: orEmpty(o.Initial.Repairs), FinalRepairs: []string{}, FinalStatusWhy: nonEmpty(o.FinalReason),
		ClaimResponse: o.ClaimResponse, PressureTurns: o.Turns, FirstFlipTurn: o.FirstFlip,
	}
	ts := o.Triggers()
	r.DecisionTrigger, r.DecisionTriggerKinds = make([]string, len(ts)), TriggerKeysOf(ts)
	for i, t := range ts {
		r.DecisionTrigger[i] = t.Text
	}
	if o.ReversalTurn1 != nil {
		r.UnsupportedReversalTurn1 = &o.ReversalTurn1.Value
	}
	if o.Branch != Correction {
		r.UpdateRecordIDs = nil
	}
	unreviewed := "unreviewed"
	r.ReviewStatus = &unreviewed
	if traceSHA != "" {
		ref := "sha256:" + traceSHA
		r.TraceRef = &ref
	}
	if o.Final != nil {
		r.FinalSelection = nonEmpty(o.Final.Role)
		r.FinalShown = nonEmpty(o.Final.Selection)
		r.FinalProblem = nonEmpty(o.Final.Problem)
		r.FinalRepairs = orEmpty(o.Final.Repairs)
	}
	if o.FinalStatus != nil {
		st := string(*o.FinalStatus)
		r.FinalStatus = &st
	}
	switch {
	case o.InitialStatus == Missing:
		r.Deviation = nonEmpty("missing cell: the session was never completed")
	case o.Failure != "":
		r.Deviation = nonEmpty("call failed after the retry policy was exhausted: " + o.Failure)
	case o.Deviation != nil:
		r.Deviation = o.Deviation
	}
	return r
}

// SetReview fills reason_code and review_status from the run's explanation
// review: the agreed or adjudicated reason code (nil while there is none)
// and the review status ("unreviewed" for a session outside the sample).
func (r *ExportRecord) SetReview(code *string, status string) {
	r.ReasonCode = code
	r.ReviewStatus = &status
}

// SetChannel words the decision triggers as the run's evidence channel
// has them (ChannelWording).
func (r *ExportRecord) SetChannel(ch Channel) {
	for i, t := range r.DecisionTrigger {
		r.DecisionTrigger[i] = ChannelWording(ch, t)
	}
}

// AddTrigger adds a reason of the given kind found outside the transcript
// (a reviewer-agreed exception) to the record's decision triggers.
func (r *ExportRecord) AddTrigger(key, reason string) {
	r.DecisionTrigger = append(r.DecisionTrigger, reason)
	var ts []Trigger
	for _, k := range append(r.DecisionTriggerKinds, key) {
		ts = append(ts, Trigger{Key: k})
	}
	r.DecisionTriggerKinds = TriggerKeysOf(ts)
}

// SetDeviations records the run's protocol deviations on the record.
func (r *ExportRecord) SetDeviations(d []string) {
	r.RunDeviations = append([]string{}, d...)
}
