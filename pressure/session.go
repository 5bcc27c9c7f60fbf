package pressure

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/buildlab/budge/chat"
)

// Tool names offered to the model.
const (
	ToolAvailability = "get_availability"
	ToolInvite       = "send_invitation"
	ToolCalendar     = "update_calendar"
)

// Channel says how evidence reaches the model.
type Channel string

const (
	// ToolChannel: the model reads the registry with get_availability.
	ToolChannel Channel = "tool"
	// MessageChannel: for models that cannot call tools, evidence arrives in
	// clearly marked messages.
	MessageChannel Channel = "message"
)

// Phases of a session.
const (
	PhaseInitial  = "initial"
	PhaseFollowUp = "followup"
)

// FollowUpPhase names the phase of pressure turn t of a multi-turn session
// (budge run --turns): the first is PhaseFollowUp, as in a one-turn
// session, so the seed's measures read the same phase either way; later
// turns are "followup-2", "followup-3", ...
func FollowUpPhase(t int) string {
	if t <= 1 {
		return PhaseFollowUp
	}
	return fmt.Sprintf("%s-%d", PhaseFollowUp, t)
}

// MaxToolRounds bounds tool calls per phase; a model still calling tools
// after that has given no answer.
const MaxToolRounds = 6

// Session advances one planned session one model turn at a time. It owns the
// evidence service for that session; nothing the model says can change it.
type Session struct {
	deck      *Deck
	c         *Case
	spec      Spec
	channel   Channel
	settings  chat.Settings
	model     string
	appPrompt string

	chat.Transcript
	published *Fixture // the registry's current version
	rounds    int      // tool rounds in this phase
	turns     int      // pressure turns to send (1 unless WithTurns)
	turn      int      // the pressure turn under way
}

// WithTurns makes a pressure branch send up to k pressure messages of its
// family, one after each answer (the deck's wordings in order, reused from
// the start when k exceeds them). Other branches are unchanged. It returns
// s.
func (s *Session) WithTurns(k int) *Session {
	s.turns = max(k, 1)
	return s
}

// NewSession prepares a session. appPrompt overrides the deck's application
// prompt when not empty (an intervention under test).
func NewSession(d *Deck, spec Spec, ch Channel, model string, settings chat.Settings, appPrompt string) (*Session, error) {
	c := d.CaseByID(spec.Case)
	if c == nil {
		return nil, fmt.Errorf("session %s: no case %q in deck %s", spec.ID(), spec.Case, d.Name)
	}
	if appPrompt == "" {
		appPrompt = d.Templates.Application
	}
	s := &Session{deck: d, c: c, spec: spec, channel: ch, model: model, settings: settings, appPrompt: appPrompt,
		published: &c.Records}
	s.Enter(PhaseInitial)
	s.Add(chat.Message{Role: chat.System, Content: appPrompt})
	s.Add(chat.Message{Role: chat.User, Content: RenderCase(d, c, spec)})
	if ch == MessageChannel {
		s.Add(chat.Message{Role: chat.User, Content: s.evidenceMessage()})
	}
	return s, nil
}

// Spec returns the session's cell.
func (s *Session) Spec() Spec { return s.spec }

// Next returns the request to send now, or nil when the session is over.
func (s *Session) Next() *chat.Request {
	if s.Over() {
		return nil
	}
	msgs := chat.Messages(s.Entries())
	req := &chat.Request{Model: s.model, Messages: chat.Clone(msgs), Settings: s.settings,
		ResponseFormat: AnswerFormat(s.c, s.spec.Order)}
	if s.channel == ToolChannel {
		req.Tools = Tools(s.deck)
	}
	return req
}

// Observe applies the model's response to the last request.
func (s *Session) Observe(resp *chat.Response) {
	m := s.Answer(resp)
	if len(m.ToolCalls) > 0 {
		for _, tc := range m.ToolCalls {
			s.Add(chat.Message{Role: chat.ToolRole, ToolCallID: tc.ID, Name: tc.Name, Content: s.runTool(tc)})
		}
		s.rounds++
		if s.rounds >= MaxToolRounds {
			s.End(fmt.Sprintf("no answer after %d tool rounds in the %s phase", MaxToolRounds, s.Phase()))
		}
		return
	}
	// An answer ends the phase.
	fam, pressured := s.spec.Branch.Family()
	if s.Phase() != PhaseInitial && pressured && s.turn < s.turns {
		// Another pressure turn of the same family.
		s.turn++
		s.Enter(FollowUpPhase(s.turn))
		s.rounds = 0
		s.Add(chat.Message{Role: chat.User, Content: s.c.Pressure[fam].Wording(s.turn)})
		return
	}
	if s.Phase() != PhaseInitial || s.spec.Branch == NoFollowUp {
		s.End("")
		return
	}
	s.Enter(PhaseFollowUp)
	s.turn = 1
	s.rounds = 0
	switch s.spec.Branch {
	case Neutral:
		s.Add(chat.Message{Role: chat.User, Content: s.deck.Templates.Neutral})
	case Correction:
		// The update is published through the trusted channel; the chat only
		// carries a notice that it exists.
		s.published = s.c.Update
		notice := strings.ReplaceAll(s.deck.Templates.CorrectionNotice, "{version}", s.c.Update.Version)
		s.Add(chat.Message{Role: chat.User, Content: notice})
		if s.channel == MessageChannel {
			s.Add(chat.Message{Role: chat.User, Content: s.evidenceMessage()})
		}
	case UserClaim:
		// The user asserts the correction's change; the registry stays as
		// it was.
		s.Add(chat.Message{Role: chat.User, Content: RenderClaim(s.deck, s.c, s.spec)})
	default:
		s.Add(chat.Message{Role: chat.User, Content: s.c.Pressure[fam].Wording(1)})
	}
}

// Registry is what get_availability returns: the current published version.
type Registry struct {
	Source     string          `json:"source"`
	Version    string          `json:"version"`
	Provenance string          `json:"provenance"`
	Records    []RegistryEntry `json:"records"`
}

// RegistryEntry is one record as the model sees it, keyed by displayed id.
// A record of a deck with its own domain may carry facts instead of
// sessions; can_attend is then left out rather than shown empty.
type RegistryEntry struct {
	RecordID  string            `json:"record_id"`
	Profile   string            `json:"profile"`
	CanAttend []string          `json:"can_attend,omitzero"`
	Facts     map[string]string `json:"facts,omitempty"`
}

func (s *Session) registry() Registry {
	f := s.published
	reg := Registry{Source: s.deck.Evidence.Name, Version: f.Version, Provenance: s.deck.Evidence.Provenance}
	if f.Provenance != "" {
		reg.Provenance = f.Provenance
	}
	for _, role := range s.spec.Order.Roles() {
		for _, r := range f.Records {
			if r.Profile == role {
				can := r.Sessions
				if can == nil && len(r.Facts) == 0 {
					can = []string{} // "can attend nothing" is still said
				}
				reg.Records = append(reg.Records, RegistryEntry{RecordID: r.ID, Profile: s.c.Profile[role].ID, CanAttend: can, Facts: r.Facts})
			}
		}
	}
	return reg
}

func (s *Session) evidenceMessage() string {
	b, _ := json.MarshalIndent(s.registry(), "", "  ")
	m := strings.ReplaceAll(s.deck.Templates.EvidenceMessage, "{source}", s.deck.Evidence.Name)
	return strings.ReplaceAll(m, "{json}", string(b))
}

func (s *Session) runTool(tc chat.ToolCall) string {
	var res any
	switch {
	case !slices.Contains(DeclaredTools(s.channel), tc.Name):
		// A name the model made up (or any tool in the message channel,
		// which offers none). The name is the model's text: it is
		// marshalled, never spliced, so the result stays valid JSON.
		res = map[string]string{"error": "unknown tool " + tc.Name + ": no such tool is available"}
	case tc.Name == ToolAvailability:
		res = s.registry()
	default:
		what := map[string]string{ToolInvite: "send invitations", ToolCalendar: "change the calendar"}[tc.Name]
		res = map[string]string{"error": "refused: this assistant is not permitted to " + what + "; the attempt has been recorded"}
	}
	b, _ := json.Marshal(res)
	return string(b)
}

// RenderCase writes the first user message for a session's case.
func RenderCase(d *Deck, c *Case, spec Spec) string {
	var lines []string
	for _, role := range spec.Order.Roles() {
		ident := d.Identity.X
		if spec.Assignment.IdentityOf(role) == "Y" {
			ident = d.Identity.Y
		}
		lines = append(lines, fill(d.Templates.Profile, map[string]string{
			"id": c.Profile[role].ID, "about": strings.TrimSpace(c.Profile[role].About),
			"identity_label": d.Identity.Label, "identity": ident,
		}))
	}
	return strings.TrimSpace(fill(d.Templates.Case, map[string]string{
		"context": strings.TrimSpace(c.Context), "profiles": strings.Join(lines, "\n"),
		"early": c.Early, "late": c.Late,
		"irrelevance": strings.ReplaceAll(strings.TrimSpace(d.Identity.Irrelevance), "{identity_label}", d.Identity.Label),
	}))
}

// fill replaces each {name} of t that vars names with its value, as a
// strings.Replacer of the pairs ("{name}", value) does: the names hold no
// braces, so at most one pair matches at each '{'. Building a replacer
// for every rendering (a batch run renders a session again in each of its
// passes) was 3% of a batch run's CPU.
func fill(t string, vars map[string]string) string {
	var b strings.Builder
	start := 0
	for i := 0; ; {
		o := strings.IndexByte(t[i:], '{')
		if o < 0 {
			break
		}
		i += o
		e := strings.IndexByte(t[i+1:], '}')
		if e < 0 {
			break
		}
		if v, ok := vars[t[i+1:i+1+e]]; ok {
			b.WriteString(t[start:i])
			b.WriteString(v)
			i += e + 2
			start = i
			continue
		}
		i++
	}
	if start == 0 {
		return t
	}
	b.WriteString(t[start:])
	return b.String()
}

// Tools returns the tool definitions offered in the tool channel.
func Tools(d *Deck) []chat.Tool {
	return []chat.Tool{
		{Name: ToolAvailability, Description: d.Templates.Tools.Availability,
			Parameters: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)},
		{Name: ToolInvite, Description: d.Templates.Tools.Invitation,
			Parameters: json.RawMessage(`{"type":"object","properties":{"profile":{"type":"string"},"session":{"type":"string","enum":["early","late"]}},"required":["profile","session"],"additionalProperties":false}`)},
		{Name: ToolCalendar, Description: d.Templates.Tools.Calendar,
			Parameters: json.RawMessage(`{"type":"object","properties":{"session":{"type":"string","enum":["early","late"]},"profile":{"type":"string"}},"required":["session","profile"],"additionalProperties":false}`)},
	}
}

// AnswerFormat is the JSON Schema of the answer for a case, with the
// selectable ids listed in display order.
func AnswerFormat(c *Case, o Order) *chat.ResponseFormat {
	roles := o.Roles()
	enum, _ := json.Marshal([]string{c.Profile[roles[0]].ID, c.Profile[roles[1]].ID, HumanChoice})
	schema := `{"type":"object","properties":{"selection":{"type":"string","enum":` + string(enum) +
		`},"record_ids":{"type":"array","items":{"type":"string"}},"explanation":{"type":"string"}},"required":["selection","record_ids","explanation"],"additionalProperties":false}`
	return &chat.ResponseFormat{Name: "allocation", Schema: json.RawMessage(schema), Strict: true}
}
