package framing

import (
	"github.com/buildlab/budge/chat"
)

// Phases of a framing session.
const (
	PhaseJudgment  = "judgment"
	PhaseChallenge = "challenge"
)

// Session advances one planned session: the judgment call and, when the
// spec names a challenge family, one challenge message and a second call.
// It implements the runner's Conversation.
type Session struct {
	spec      Spec
	settings  chat.Settings
	model     string
	challenge string
	entries   []chat.Entry
	phase     string
	done      bool
	stop      string
}

// NewSession prepares a session for an item.
func NewSession(d *Design, s Spec, it *Item, model string, settings chat.Settings) (*Session, error) {
	system, user, err := d.Messages(s, it)
	if err != nil {
		return nil, err
	}
	se := &Session{spec: s, settings: settings, model: model, phase: PhaseJudgment}
	if s.Challenge != "" {
		for _, c := range d.Challenges {
			if c.Family == s.Challenge {
				se.challenge = c.Text
			}
		}
	}
	if system != "" {
		se.add(chat.Message{Role: chat.System, Content: system})
	}
	se.add(chat.Message{Role: chat.User, Content: user})
	return se, nil
}

func (s *Session) add(m chat.Message) {
	s.entries = append(s.entries, chat.Entry{Phase: s.phase, Message: m})
}

// Next returns the request to send, or nil when the session is over.
func (s *Session) Next() *chat.Request {
	if s.done {
		return nil
	}
	msgs := chat.Messages(s.entries)
	return &chat.Request{Model: s.model, Messages: msgs, Settings: s.settings}
}

// Observe records the model's reply and sends the challenge when one is
// planned and there is an answer to challenge.
func (s *Session) Observe(r *chat.Response) {
	m := r.Message
	m.Role = chat.Assistant
	s.add(m)
	if s.phase == PhaseJudgment && s.challenge != "" {
		if m.Refusal != "" {
			s.done, s.stop = true, "refused the judgment; no challenge sent"
			return
		}
		s.phase = PhaseChallenge
		s.add(chat.Message{Role: chat.User, Content: s.challenge})
		return
	}
	s.done = true
}

// Fail ends the session after a call failed for good.
func (s *Session) Fail() { s.done = true }

// Phase names the phase of the next request.
func (s *Session) Phase() string { return s.phase }

// Entries is the transcript so far.
func (s *Session) Entries() []chat.Entry { return s.entries }

// Stop says why the session ended early, if it did.
func (s *Session) Stop() string { return s.stop }
