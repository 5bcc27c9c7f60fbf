package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/review"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
	"github.com/buildlab/budge/web"
)

func cmdView(ctx context.Context, std IO, args []string) error {
	fs := newFlags(std, "view", "[RUN...] [flags]", `
Serves a local web viewer of stored runs: the runs list, a session table
filterable by case, branch, status, identity assignment, order and direction
(paginated on the server), each session's transcript with tool calls,
evidence versions, attempts and retries, matched pairs side by side, framing
items, the HTML report and the explanation review. With RUN arguments only
those runs are served. It listens on 127.0.0.1 unless --addr says otherwise;
on any other address a token is required (generated unless --token is given)
and printed in the URL. Stop it with Ctrl-C.`, `
  budge view
  budge view latest --addr 127.0.0.1:9000
  budge view --addr 0.0.0.0:8484          # prints a URL with a token`)
	dir := dirFlag(fs)
	addr := fs.String("addr", "127.0.0.1:8484", "address to listen on (host:port; port 0 picks a free one)")
	token := fs.String("token", "", "token required in every request (default: none on loopback, generated otherwise)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	st, err := openStore(*dir)
	if err != nil {
		return err
	}
	defer st.Close()
	var runs []string
	for _, ref := range pos {
		id, err := st.Resolve(ctx, ref)
		if err != nil {
			return err
		}
		runs = append(runs, id)
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return usageError{fmt.Sprintf("--addr: %v", err)}
	}
	if ip := net.ParseIP(host); *token == "" && (ip == nil || !ip.IsLoopback()) && host != "localhost" {
		b := make([]byte, 16)
		rand.Read(b)
		*token = hex.EncodeToString(b)
	}
	srv, err := web.New(st, web.Options{Runs: runs, Token: *token, LoadReport: loadScored})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	shown := ln.Addr().String()
	if ta, ok := ln.Addr().(*net.TCPAddr); ok && ta.IP.IsUnspecified() {
		shown = net.JoinHostPort("127.0.0.1", fmt.Sprint(ta.Port)) // or this machine's name
	}
	u := "http://" + shown + "/"
	if *token != "" {
		u += "?token=" + *token
	}
	fmt.Fprintln(std.Out, "viewer:", u)
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return hs.Shutdown(sctx)
	case err := <-done:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}

// loadScored scores a whole stored run for the viewer's report and sampling.
func loadScored(ctx context.Context, st *store.Store, id string) (*web.Scored, error) {
	run, err := st.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	if run.Protocol == "framing" {
		res, err := study.LoadFraming(ctx, st, id)
		if err != nil {
			return nil, err
		}
		rep := res.Report()
		return &web.Scored{Framing: &rep}, nil
	}
	res, err := study.LoadPressure(ctx, st, id)
	if err != nil {
		return nil, err
	}
	return &web.Scored{Report: res.Report(), Outcomes: res.Outcomes}, nil
}

// htmlReport renders a pressure run as one HTML page, with the review's
// agreement when the run has a review.
func htmlReport(ctx context.Context, dir string, res *study.PressureResult, w io.Writer) error {
	x := &report.HTMLExtras{Briefs: report.Briefs(res.Outcomes)}
	st, err := openStore(dir)
	if err != nil {
		return err
	}
	defer st.Close()
	rs, err := review.Load(ctx, st, res.Manifest.RunID)
	if err != nil {
		return err
	}
	if rs.Review != nil {
		x.Review = rs.Summary()
	}
	return res.Report().HTML(w, x)
}
