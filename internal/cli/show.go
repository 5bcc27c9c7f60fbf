package cli

import (
	"context"
	"fmt"

	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/store"
)

func cmdShow(ctx context.Context, std IO, args []string) error {
	fs := newFlags(std, "show", "[RUN] SESSION | [RUN] --artifact SHA", `
Prints one session of a run as it happened: the spec, the scored outcome, every
message (tool calls and tool results included, with their phase) and every
attempt with its outcome, error kind and artifact hashes. With --artifact it
prints a stored artifact (a request, a response or a trace) verbatim; the
export's trace_ref is such a hash.`, `
  budge show latest robotics-arm/I/P-first/authority/r1
  budge show latest --artifact sha256:3f2a...`)
	dir := dirFlag(fs)
	artifact := fs.String("artifact", "", "print this artifact (sha256) instead of a session")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	runRef := "latest"
	want := 1
	if *artifact != "" {
		want = 0
	}
	switch len(pos) {
	case want:
	case want + 1:
		runRef, pos = pos[0], pos[1:]
	default:
		return usageError{"usage: budge show [RUN] SESSION, or budge show [RUN] --artifact SHA"}
	}
	st, err := openStore(*dir)
	if err != nil {
		return err
	}
	defer st.Close()
	id, err := st.Resolve(ctx, runRef)
	if err != nil {
		return err
	}
	if *artifact != "" {
		b, err := st.Artifact(ctx, id, *artifact)
		if err != nil {
			return usageError{err.Error()}
		}
		_, err = std.Out.Write(b)
		return err
	}
	sessionID := pos[0]
	sessions, err := st.Sessions(ctx, id)
	if err != nil {
		return err
	}
	outcome, err := scoredSession(ctx, *dir, id, sessionID)
	if err != nil {
		return err
	}
	var stored *store.Session
	for i := range sessions {
		if sessions[i].ID == sessionID {
			stored = &sessions[i]
			break
		}
	}
	return report.Transcript(std.Out, id, sessionID, outcome, stored)
}

// scoredSession is the scored outcome of one session of a run of either
// protocol (a framing session's outcome carries its parse status and the
// repairs used).
func scoredSession(ctx context.Context, dir, runID, sessionID string) (any, error) {
	fr, err := loadFramingRun(ctx, dir, []string{runID})
	if err != nil {
		return nil, err
	}
	if fr != nil {
		for i := range fr.Observations {
			if fr.Observations[i].Session == sessionID {
				return &fr.Observations[i], nil
			}
		}
		return nil, usageError{fmt.Sprintf("run %s has no session %q (ids look like sample-facts-01/budge/-/none/C1-True; budge export lists them)", runID, sessionID)}
	}
	res, err := loadRun(ctx, dir, []string{runID})
	if err != nil {
		return nil, err
	}
	for i := range res.Outcomes {
		if res.Outcomes[i].ID() == sessionID {
			return &res.Outcomes[i], nil
		}
	}
	return nil, usageError{fmt.Sprintf("run %s has no session %q (ids look like robotics-arm/I/P-first/authority/r1; budge export lists them)", runID, sessionID)}
}
