package cli

import (
	"context"
	"io"
	"os"

	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

const showHelp = `
Prints one session of a run as it happened: the spec, the scored outcome, every
message (tool calls and tool results included, with their phase) and every
attempt with its outcome, error kind and artifact hashes. With --artifact it
prints a stored artifact (a request, a response or a trace) verbatim; the
export's trace_ref is such a hash.`

func cmdShow(ctx context.Context, std IO, args []string) error {
	fs := newFlags(std, "show", "[RUN] SESSION | [RUN] --artifact SHA", showHelp, `
  budge show latest robotics-arm/I/P-first/authority/r1
  budge show latest --artifact sha256:3f2a...`)
	dir := dirFlag(fs)
	artifact := fs.String("artifact", "", "print this artifact (sha256) instead of a session")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	want := 1
	if *artifact != "" {
		want = 0
	}
	if len(pos) != want && len(pos) != want+1 {
		return usageError{"usage: budge show [RUN] SESSION, or budge show [RUN] --artifact SHA"}
	}
	runPos := pos[:len(pos)-want]
	if *artifact != "" {
		return showArtifact(ctx, std, *dir, runPos, *artifact)
	}
	sessionID := pos[len(pos)-1]
	return withRun(ctx, *dir, runPos, func(st *store.Store, res study.Result) error {
		id := res.Head().RunID
		outcome, err := res.Session(ctx, st, sessionID)
		if err != nil {
			return err
		}
		stored, err := study.StoredSession(ctx, st, id, sessionID)
		if err != nil {
			return err
		}
		return report.Transcript(std.Out, id, sessionID, outcome, stored)
	})
}

// showArtifact prints one stored artifact of the run pos names.
func showArtifact(ctx context.Context, std IO, dir string, pos []string, sha string) error {
	return withStore(dir, func(st *store.Store) error {
		ref := "latest"
		if len(pos) == 1 {
			ref = pos[0]
		}
		id, err := st.Resolve(ctx, ref)
		if err != nil {
			return err
		}
		b, err := st.Artifact(ctx, id, sha)
		if err != nil {
			return usageError{err.Error()}
		}
		if isTerminal(std.Out) {
			// Verbatim into a file or a pipe; escaped on a terminal.
			_, err = io.WriteString(std.Out, report.TerminalSafe(string(b)))
			return err
		}
		_, err = std.Out.Write(b)
		return err
	})
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
