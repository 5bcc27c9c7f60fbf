package framing

// Record is one framing session as `budge export` writes it: the cell (item,
// condition, arm, template, labels), how its answer was read (status and the
// repairs used), the choice and whether it was correct, and where its
// transcript is.
type Record struct {
	RunID       string    `json:"run_id"`
	Session     string    `json:"session_id"`
	Item        string    `json:"item_id"`
	Domain      string    `json:"domain"`
	Stratum     string    `json:"stratum,omitempty"`
	Condition   Condition `json:"condition"`
	Arm         string    `json:"arm"`
	Template    string    `json:"template"`
	Labels      string    `json:"labels,omitempty"`
	Challenge   string    `json:"challenge,omitempty"`
	Status      string    `json:"parse_status"`
	Repairs     []string  `json:"repairs"`
	Choice      *string   `json:"choice"`
	Correct     *bool     `json:"correct"`
	Problem     string    `json:"problem,omitempty"`
	Reasoning   string    `json:"reasoning,omitempty"`
	After       *Reply    `json:"after_challenge,omitempty"`
	Fingerprint string    `json:"model_and_prompt_fingerprint"`
	TraceRef    *string   `json:"trace_ref"`
}

// Export turns a scored session into its export record. Choice and correct
// are null unless the answer was read; trace is "" for a session with no
// stored transcript.
func Export(runID, fingerprint string, o Observation, trace string) Record {
	r := Record{RunID: runID, Session: o.Session, Item: o.Item, Domain: o.Domain, Stratum: o.Stratum, Condition: o.Condition,
		Arm: o.Mitigation, Template: o.Template, Labels: o.Labels, Challenge: o.Challenge, Status: o.Status,
		Repairs: append([]string{}, o.Recovered...), Problem: o.Problem, Reasoning: o.Reasoning, After: o.AfterChallenge,
		Fingerprint: fingerprint}
	if o.Status == StatusAnswered {
		choice, correct := o.Choice, o.Correct
		r.Choice, r.Correct = &choice, &correct
	}
	if trace != "" {
		r.TraceRef = &trace
	}
	return r
}
