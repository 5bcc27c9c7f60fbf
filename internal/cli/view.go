package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
	"github.com/buildlab/budge/web"
)

const viewAbout = `
Serves a local web viewer of stored runs: the runs list with each run's
headline measures, a session table with first and final answers, reversal,
correction and review state, filterable (failures, reversals, discordant
pairs, parse and transport failures, unreviewed, transcript search),
sortable by any column and paged on the server, each session's transcript
with tool calls, evidence versions, attempts and retries, matched pairs side
by side, framing items, the run diff, the HTML report with its counts linked
to their sessions, and the explanation review. Once it listens it scores
each run not yet scored for the viewer and keeps the result in the store;
meanwhile a run's page shows the sessions scored so far.
With RUN arguments only those runs are served. It listens on 127.0.0.1 unless --addr says otherwise;
on any other address a token is required (generated unless --token is given)
and printed in the URL. That token does not open a reviewer's pages: each
reviewer opens theirs with their own link (budge review sample prints it
once; budge review token issues a new one), which opens nothing else.
Stop it with Ctrl-C.`

const viewExamples = `
  budge view
  budge view latest --addr 127.0.0.1:9000
  budge view --addr 0.0.0.0:8484          # prints a URL with a token`

func cmdView(ctx context.Context, std IO, args []string) error {
	fs := newFlags(std, "view", "[RUN...] [flags]", viewAbout, viewExamples)
	dir := dirFlag(fs)
	addr := fs.String("addr", "127.0.0.1:8484", "address to listen on (host:port; port 0 picks a free one)")
	token := fs.String("token", "", "token required in every request (default: none on loopback, generated otherwise)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	tok, err := viewToken(*addr, *token)
	if err != nil {
		return err
	}
	st, err := store.OpenReader(ctx, *dir, true)
	if err != nil {
		return err
	}
	defer st.Close()
	if st.ReadOnly() {
		fmt.Fprintf(std.Err, "%s is read-only: the viewer scores runs into a temporary index, and reviews cannot be recorded\n", store.Redact(*dir))
	}
	return store.RedactError(viewStore(ctx, std, st, pos, tok, *addr), *dir)
}

func viewStore(ctx context.Context, std IO, st *store.Store, pos []string, tok, addr string) error {
	var runs []string
	for _, ref := range pos {
		id, err := st.Resolve(ctx, ref)
		if err != nil {
			return err
		}
		runs = append(runs, id)
	}
	srv, err := web.New(st, web.Options{Runs: runs, Token: tok, LoadReport: loadScored, Patience: viewPatience})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintln(std.Out, "viewer:", viewerURL(ln.Addr(), tok))
	sctx, stop := serverInterrupts(ctx, std)
	defer stop()
	// Score every run for the viewer once (kept in the store), so the runs
	// list and session tables answer without scoring. The viewer listens
	// meanwhile: the runs list answers at once, and a run's page says how
	// far its scoring got until its table is ready.
	go func() {
		err := srv.IndexAll(sctx, func(r store.Run) {
			fmt.Fprintf(std.Err, "scoring run %s for the viewer (%d sessions planned)\n", r.ID, r.Planned)
		})
		if err != nil && sctx.Err() == nil {
			fmt.Fprintf(std.Err, "budge view: %v (the run's page tries again when it is opened)\n", err)
		}
	}()
	return serve(sctx, &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}, ln)
}

// viewPatience is how long a page of a run waits for the run's scoring
// before it answers with its progress.
const viewPatience = 3 * time.Second

// minToken is the shortest token accepted beyond loopback: one that can be
// guessed protects nothing.
const minToken = 16

// viewToken is the token the viewer requires: the given one, none on a
// loopback address, or else a generated one. Beyond loopback a given token
// must be at least minToken characters.
func viewToken(addr, token string) (string, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", usageError{fmt.Sprintf("--addr: %v", err)}
	}
	ip := net.ParseIP(host)
	if (ip != nil && ip.IsLoopback()) || host == "localhost" {
		return token, nil
	}
	if token == "" {
		b := make([]byte, 16)
		rand.Read(b)
		return hex.EncodeToString(b), nil
	}
	if len(token) < minToken {
		return "", usageError{fmt.Sprintf("--token must be at least %d characters on %s, which is reachable beyond this machine (leave it out to have one generated)", minToken, host)}
	}
	return token, nil
}

// viewerURL is the address to open the viewer at.
func viewerURL(a net.Addr, token string) string {
	shown := a.String()
	if ta, ok := a.(*net.TCPAddr); ok && ta.IP.IsUnspecified() {
		shown = net.JoinHostPort("127.0.0.1", fmt.Sprint(ta.Port)) // or this machine's name
	}
	u := "http://" + shown + "/"
	if token != "" {
		u += "?token=" + token
	}
	return u
}

// serve serves on ln until ctx is done, then shuts the server down
// gracefully, giving requests in flight five seconds.
func serve(ctx context.Context, hs *http.Server, ln net.Listener) error {
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		return hs.Shutdown(sctx)
	case err := <-done:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}

// loadScored scores a whole stored run for the viewer's report and
// sampling; its sessions are scored again from the store when they are
// needed.
func loadScored(ctx context.Context, st *store.Store, id string) (*study.View, error) {
	res, err := study.Load(ctx, st, id)
	if err != nil {
		return nil, err
	}
	return res.View(ctx)
}
