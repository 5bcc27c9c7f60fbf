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
	chat.Transcript
}

// NewSession prepares a session for an item.
func NewSession(d *Design, s Spec, it *Item, model string, settings chat.Settings) (*Session, error) {
	system, user, err := d.Messages(s, it)
	if err != nil {
		return nil, err
	}
	se := &Session{spec: s, settings: settings, model: model}
	se.Enter(PhaseJudgment)
	if s.Challenge != "" {
		for _, c := range d.Challenges {
			if c.Family == s.Challenge {
				se.challenge = c.Text
			}
		}
	}
	if system != "" {
		se.Add(chat.Message{Role: chat.System, Content: system})
	}
	se.Add(chat.Message{Role: chat.User, Content: user})
	return se, nil
}

// Next returns the request to send, or nil when the session is over.
func (s *Session) Next() *chat.Request {
	if s.Over() {
		return nil
	}
	return &chat.Request{Model: s.model, Messages: chat.Messages(s.Entries()), Settings: s.settings}
}

// Observe records the model's reply and sends the challenge when one is
// planned and there is an answer to challenge.
func (s *Session) Observe(r *chat.Response) {
	m := s.Answer(r)
	if s.Phase() == PhaseJudgment && s.challenge != "" {
		if m.Refusal != "" {
			s.End("refused the judgment; no challenge sent")
			return
		}
		s.Enter(PhaseChallenge)
		s.Add(chat.Message{Role: chat.User, Content: s.challenge})
		return
	}
	s.End("")
}
