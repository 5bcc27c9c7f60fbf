package judge

import (
	"fmt"

	"github.com/buildlab/budge/chat"
)

// Phase is the one phase of a judge session.
const Phase = "judge"

// Spec is one planned judge session: a task, shown in an order, asked for
// the repeat-th time.
type Spec struct {
	Task   int    `json:"task"` // index into the run's tasks
	TaskID string `json:"task_id"`
	Order  int    `json:"order"`
	Repeat int    `json:"repeat"`
}

// ID is the session id: task position, order and repeat. It carries no
// part of the task's own id, which may name an identity assignment.
func (s Spec) ID() string { return fmt.Sprintf("t%04d/o%d/r%d", s.Task, s.Order, s.Repeat) }

// Plan lists the sessions of tasks in canonical order: every task in each
// of its orders, repeats times.
func Plan(tasks []Task, repeats int) []Spec {
	var out []Spec
	for i, t := range tasks {
		for o := range t.Orders() {
			for r := range repeats {
				out = append(out, Spec{Task: i, TaskID: t.ID, Order: o, Repeat: r})
			}
		}
	}
	return out
}

// Session is one judge call as a conversation: the prompt, then the
// judge's answer.
type Session struct {
	model    string
	settings chat.Settings
	chat.Transcript
}

// NewSession starts the session of spec s on task t with codebook cb.
func NewSession(cb Codebook, t Task, s Spec, model string, settings chat.Settings) *Session {
	se := &Session{model: model, settings: settings}
	se.Enter(Phase)
	se.Add(chat.Message{Role: chat.User, Content: Prompt(cb, t, s.Order)})
	return se
}

// Next returns the request to send, or nil when the session is over.
func (s *Session) Next() *chat.Request {
	if s.Over() {
		return nil
	}
	return &chat.Request{Model: s.model, Messages: chat.Messages(s.Entries()), Settings: s.settings}
}

// Observe records the judge's answer; the session is then over.
func (s *Session) Observe(r *chat.Response) {
	s.Answer(r)
	s.End("")
}

// Score reads a stored judge session: its code and how it was read. ran
// is false for a session never stored; failure is the stored failure
// message of one whose call failed.
func Score(cb Codebook, s Spec, ran bool, entries []chat.Entry, failure string) Judgment {
	j := Judgment{Task: s.TaskID, Session: s.ID(), Order: s.Order, Repeat: s.Repeat}
	answer, answered := "", false
	for _, e := range entries {
		if e.Role == chat.Assistant {
			answer, answered = e.Content, true
			if e.Refusal != "" && e.Content == "" {
				answer = ""
			}
		}
	}
	switch {
	case !ran:
		j.Status, j.Problem = StatusFailed, "never ran"
	case !answered:
		j.Status, j.Problem = StatusFailed, failure
		if j.Problem == "" {
			j.Problem = "no answer"
		}
	default:
		j.Code, j.Status, j.Problem = Parse(cb, answer)
		if codes := Applicable(cb, answer, j.Code); len(codes) > 1 {
			j.Codes = codes
		}
	}
	return j
}
