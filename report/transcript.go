package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/buildlab/budge/store"
)

// Transcript writes one session of a run as it happened (budge show): the
// scored outcome as indented JSON, then the stored session's status, every
// message (tool calls and refusals included, with their phase) and every
// attempt with its outcome, error kind and artifact hashes. se is nil when
// the run has no stored transcript for the session (a missing cell).
func Transcript(w io.Writer, runID, sessionID string, outcome any, se *store.Session) error {
	ob, err := json.MarshalIndent(outcome, "", "  ")
	if err != nil {
		return err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "session %s of run %s\n\noutcome:\n%s\n", sessionID, runID, ob)
	if se == nil {
		b.WriteString("\nno stored transcript: this cell is missing\n")
		_, err := io.WriteString(w, TerminalSafe(b.String()))
		return err
	}
	fmt.Fprintf(&b, "\nstatus %s · trace sha256:%s\n\nmessages:\n", se.Status, se.TraceSHA)
	for i, m := range se.Messages {
		fmt.Fprintf(&b, "[%d %s %s]", i, m.Phase, m.Role)
		if m.Name != "" {
			fmt.Fprintf(&b, " %s", m.Name)
		}
		b.WriteString("\n")
		indented(&b, m.Content)
		for _, tc := range m.ToolCalls {
			indented(&b, "call "+tc.Name+" "+string(tc.Arguments))
		}
		if m.Refusal != "" {
			indented(&b, "refusal: "+m.Refusal)
		}
	}
	b.WriteString("\nattempts:\n")
	for _, a := range se.Attempts {
		fmt.Fprintf(&b, "  call %d attempt %d (%s, incarnation %d): %s %s %.1fms request sha256:%s",
			a.Call, a.Attempt, a.Phase, a.Incarnation, a.Outcome, a.ErrorKind, a.DurationMS, a.RequestSHA)
		if a.ResponseSHA != "" {
			fmt.Fprintf(&b, " response sha256:%s", a.ResponseSHA)
		}
		b.WriteString("\n")
	}
	// Model content, tool arguments, error messages and ids as a terminal
	// may show them: control characters escaped.
	_, err = io.WriteString(w, TerminalSafe(b.String()))
	return err
}

// indented writes every line of s indented by four spaces; nothing for "".
func indented(b *bytes.Buffer, s string) {
	if s == "" {
		return
	}
	for _, l := range strings.Split(s, "\n") {
		b.WriteString("    " + l + "\n")
	}
}
