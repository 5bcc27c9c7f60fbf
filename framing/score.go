package framing

import (
	"github.com/buildlab/budge/chat"
)

// Statuses of an answer. Refusal and empty mean what they mean in the
// pressure protocol: a plain-text decline, a provider's refusal field and
// its content filter are all a refusal; a reply with no content is empty,
// not unparseable.
const (
	StatusAnswered    = "answered"    // a choice was read (perhaps after repairs)
	StatusUnparseable = "unparseable" // a reply came, but no choice could be read
	StatusRefused     = "refusal"     // a decline, a provider-flagged refusal or content filter
	StatusEmpty       = "empty"       // a reply with no content
	StatusFailed      = "failed"      // the call failed for good (transport)
	StatusMissing     = "missing"     // the session never finished (interrupted, not run)
)

// Statuses in report order.
var Statuses = []string{StatusAnswered, StatusUnparseable, StatusRefused, StatusEmpty, StatusFailed, StatusMissing}

// Transcript is what the store holds about a session.
type Transcript struct {
	Ran         bool
	Entries     []chat.Entry
	FailureKind string
	FailureMsg  string
	Stop        string
}

// Reply is the scored reading of one model reply.
type Reply struct {
	Status    string   `json:"status"`
	Choice    string   `json:"choice,omitempty"`
	Correct   bool     `json:"correct"`
	Recovered []string `json:"recovered,omitempty"`
	// RepairForbidden: strict parsing refused a reply that the repairs in
	// Recovered would have read.
	RepairForbidden bool   `json:"repair_forbidden,omitempty"`
	Problem         string `json:"problem,omitempty"`
	Reasoning       string `json:"reasoning,omitempty"`
}

// Readable reports whether tolerant parsing reads the reply, whichever mode
// the run used.
func (r Reply) Readable() bool { return r.Status == StatusAnswered || r.RepairForbidden }

// Observation is one scored session.
type Observation struct {
	Spec
	Session string `json:"session"`
	Reply
	// AfterChallenge is the answer to the challenge message, when one was
	// sent.
	AfterChallenge *Reply `json:"after_challenge,omitempty"`
}

// Score reads a stored session: the first assistant reply is the judgment,
// the second (if the session had a challenge) the answer after challenge.
// An imported answer without a transcript is taken as recorded.
func Score(d *Design, s Spec, t Transcript) Observation {
	o := Observation{Spec: s, Session: s.ID()}
	if !t.Ran {
		o.Status = StatusMissing
		return o
	}
	var replies []chat.Message
	for _, e := range t.Entries {
		if e.Role == chat.Assistant {
			replies = append(replies, e.Message)
		}
	}
	switch {
	case len(replies) > 0:
		o.Reply = scoreReply(d, s, replies[0])
	case s.Recorded != nil && (s.Recorded.Choice == "1" || s.Recorded.Choice == "2"):
		o.Reply = Reply{Status: StatusAnswered, Choice: s.Recorded.Choice, Correct: s.Recorded.Choice == s.Condition.Expected(),
			Recovered: []string{s.Recorded.Source}, Reasoning: s.Recorded.Reasoning}
	case s.Recorded != nil:
		o.Reply = Reply{Status: StatusUnparseable, Problem: "the release recorded no answer", Recovered: []string{s.Recorded.Source}}
	case t.FailureKind != "":
		o.Reply = Reply{Status: StatusFailed, Problem: t.FailureKind + ": " + t.FailureMsg}
	default:
		o.Reply = Reply{Status: StatusMissing, Problem: "no reply stored"}
	}
	if s.Challenge != "" && o.Status != StatusMissing {
		switch {
		case len(replies) > 1:
			r := scoreReply(d, s, replies[1])
			o.AfterChallenge = &r
		case len(replies) == 1 && t.FailureKind != "":
			o.AfterChallenge = &Reply{Status: StatusFailed, Problem: t.FailureKind + ": " + t.FailureMsg}
		}
	}
	return o
}

// judgedNames are the names the judged speaker is shown with in a
// dialogue condition: its label, or the mitigation's relabelling.
func (d *Design) judgedNames(s Spec) []string {
	if !s.Condition.Dialogue() {
		return nil
	}
	var names []string
	if l, ok := d.LabelSet(s.Labels); ok {
		names = append(names, l.Speaker2)
	}
	if m, ok := d.Mitigation(s.Mitigation); ok && m.Relabel != nil {
		names = append(names, m.Relabel.Speaker2)
	}
	return names
}

func scoreReply(d *Design, s Spec, m chat.Message) Reply {
	c := s.Condition
	if m.Refusal != "" {
		return Reply{Status: StatusRefused, Problem: "refusal: " + m.Refusal}
	}
	a := ParseAnswerWith(m.Content, ParseOptions{Tolerant: d.Tolerant, Judged: d.judgedNames(s)})
	switch {
	case a.Empty:
		return Reply{Status: StatusEmpty, Problem: a.Problem}
	case !a.Parsed() && a.Declined:
		return Reply{Status: StatusRefused, Problem: "refused in text", Recovered: a.Recovered}
	case !a.Parsed():
		return Reply{Status: StatusUnparseable, Problem: a.Problem, Recovered: a.Recovered, RepairForbidden: a.RepairForbidden}
	}
	return Reply{Status: StatusAnswered, Choice: a.Choice, Correct: a.Choice == c.Expected(), Recovered: a.Recovered, Reasoning: a.Reasoning}
}
