package judge

// ExportRecord is one judgment as budge export writes it for a judge run:
// one record per judge call (task × presentation order × repeat).
type ExportRecord struct {
	Record    string `json:"record"` // "judgment"
	RunID     string `json:"run_id"`
	SourceRun string `json:"source_run"`
	Kind      string `json:"kind"` // KindFlip or KindReason
	Codebook  string `json:"codebook"`
	// Task is the flip or session coded; Group its deference/skepticism
	// flip kind or its failure type.
	Task  string `json:"task"`
	Group string `json:"group"`
	// Session is the judge's own session; Order which text was shown first
	// (0: as listed, 1: swapped); Repeat the repeat, from 0.
	Session string `json:"session_id"`
	Order   int    `json:"order"`
	Repeat  int    `json:"repeat"`
	// Code is the primary code read ("" when none was); Codes every
	// applicable code the judge named, the primary first.
	Code  string   `json:"code"`
	Codes []string `json:"codes"`
	// Status is read, repaired, unreadable or failed; Problem says why
	// when it is not read.
	Status  string `json:"status"`
	Problem string `json:"problem,omitempty"`
	// TraceRef is "sha256:<hash>" of the judgment's transcript in the judge
	// run's artifacts (null when the call never ran).
	TraceRef *string `json:"trace_ref"`
}

// Export builds the judgment's record; groups maps task ids to their group.
func Export(runID, source, kind, codebook string, groups map[string]string, j Judgment, trace string) ExportRecord {
	r := ExportRecord{Record: "judgment", RunID: runID, SourceRun: source, Kind: kind, Codebook: codebook, Task: j.Task, Group: groups[j.Task],
		Session: j.Session, Order: j.Order, Repeat: j.Repeat, Code: j.Code, Codes: j.Codes, Status: j.Status, Problem: j.Problem}
	if r.Codes == nil {
		r.Codes = []string{}
		if j.Code != "" {
			r.Codes = []string{j.Code}
		}
	}
	if trace != "" {
		t := "sha256:" + trace
		r.TraceRef = &t
	}
	return r
}
