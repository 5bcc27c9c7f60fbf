package chat

// Transcript is a session's conversation as a protocol keeps it between
// calls: its entries, each with the phase it was added in, the phase under
// way, and whether the session is over and why it ended early. A
// protocol's session embeds one and adds what it sends next, so the
// runner's Conversation methods (Entries, Phase, Stop, Fail) are written
// once.
type Transcript struct {
	entries []Entry
	phase   string
	done    bool
	stop    string
}

// Add appends m in the phase under way.
func (t *Transcript) Add(m Message) { t.entries = append(t.entries, Entry{Phase: t.phase, Message: m}) }

// Answer appends the reply of r as the assistant's message and returns it.
func (t *Transcript) Answer(r *Response) Message {
	m := r.Message
	m.Role = Assistant
	t.Add(m)
	return m
}

// Enter starts phase (the first, or the next): messages added from now
// on belong to it.
func (t *Transcript) Enter(phase string) { t.phase = phase }

// End ends the session; why, when not empty, says why it ended early.
func (t *Transcript) End(why string) { t.done, t.stop = true, why }

// Over reports whether the session has ended.
func (t *Transcript) Over() bool { return t.done }

// Entries returns the transcript so far.
func (t *Transcript) Entries() []Entry { return t.entries }

// Phase names the phase of the next request.
func (t *Transcript) Phase() string { return t.phase }

// Stop says why the session ended early, if it did.
func (t *Transcript) Stop() string { return t.stop }

// Fail ends the session after a call that could not be completed.
func (t *Transcript) Fail() { t.done = true }
