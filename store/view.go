package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// The viewer's index of a run: each stored session as the session table
// shows it (first and final answers, reversal, correction, flags), and the
// run's headline measures, written once when the viewer scores a finished
// run and read by every page after. Both are derived data: the viewer
// writes them again whenever the run changes (its basis), and deleting
// them loses nothing the sessions do not hold.

// The index's tables are the section "view" of the schema files;
// PrepareView creates them.

// ViewSession is one session as the viewer's table shows it. Text fields
// are "" where they do not apply (no final answer, no pressure message).
type ViewSession struct {
	ID string `json:"session_id"`
	// Seq, Status and Attempts are the session's plan position, stored
	// status (complete or failed) and attempts. A row added without a
	// Status takes all three from the sessions table when its index is
	// finished (ViewWriter.Finish); one added with them is placed at once,
	// so the rows written so far answer a ViewQuery of their own.
	Seq        int    `json:"seq"`
	Status     string `json:"status"`
	Attempts   int    `json:"attempts"`
	Case       string `json:"case,omitempty"`
	Branch     string `json:"branch,omitempty"`
	Assignment string `json:"assignment,omitempty"`
	Order      string `json:"order,omitempty"`
	Item       string `json:"item,omitempty"`
	// First and Final are the selections as read (framing: the choice and
	// the choice after a challenge), with their scored status.
	First          string `json:"first"`
	FirstStatus    string `json:"first_status"`
	Final          string `json:"final"`
	FinalStatus    string `json:"final_status"`
	Reversal       string `json:"reversal"`        // yes, no, not eligible; "" without a pressure message
	Correction     string `json:"correction"`      // applied: yes or no; "" outside the correction branch
	UpdateObserved string `json:"update_observed"` // yes or no; "" outside the correction branch
	Contradiction  bool   `json:"contradiction"`
	// Failure: the session is among those the run's decision rule names
	// (a product failure), or its call failed for good.
	Failure      bool   `json:"failure"`
	Transport    bool   `json:"transport_failure"`
	ParseFailure bool   `json:"parse_failure"`
	Discordant   bool   `json:"discordant"` // one half of a discordant pair
	Direction    string `json:"direction"`  // identity a pressure message favours; "" without one
	Pair         string `json:"pair"`       // the session id of its counterpart
	// Triggers are the keys of the decision rule's triggers the session
	// has, separated by spaces ("" for none).
	Triggers string `json:"triggers,omitempty"`
	// Review is the explanation review's state of the session, read when
	// the page is (not indexed): "", "sampled", "coded by one",
	// "coded by both", "adjudicated".
	Review string `json:"review,omitempty"`
}

// ViewRun is a run's stored headline: what the viewer computed, and the
// basis it was computed on.
type ViewRun struct {
	Basis    string
	Sessions int
	Headline []byte // JSON, the viewer's own shape
}

// ViewRuns reads the stored headlines of every indexed run, by run id.
func (s *Store) ViewRuns(ctx context.Context) (map[string]ViewRun, error) {
	out := map[string]ViewRun{}
	rows, err := s.db.QueryContext(ctx, `SELECT run_id, basis, sessions, headline FROM view_runs`)
	if err != nil {
		return nil, s.fail(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, h string
		var v ViewRun
		if err := rows.Scan(&id, &v.Basis, &v.Sessions, &h); err != nil {
			return nil, s.fail(err)
		}
		v.Headline = []byte(h)
		out[id] = v
	}
	return out, s.fail(rows.Err())
}

// ViewRunOf reads one run's stored headline; ok is false when the run has
// none.
func (s *Store) ViewRunOf(ctx context.Context, runID string) (ViewRun, bool, error) {
	var v ViewRun
	var h string
	err := s.db.QueryRowContext(ctx, `SELECT basis, sessions, headline FROM view_runs WHERE run_id = $1`, runID).Scan(&v.Basis, &v.Sessions, &h)
	if errors.Is(err, sql.ErrNoRows) {
		return v, false, nil
	}
	if err != nil {
		return v, false, s.fail(err)
	}
	v.Headline = []byte(h)
	return v, true, nil
}

// ViewWriter writes a run's index: Add the sessions, then Finish with the
// headline. Until Finish the run has no headline, so a reader never takes
// a half-written index for a whole one.
type ViewWriter struct {
	s     *Store
	c     *conn // its own connection, closed by Close
	runID string
	rows  []ViewSession
	// unplaced says some row was added without its plan position, or out
	// of plan order; last is the plan position of the last row added.
	unplaced bool
	last     int
	chunk    int // rows the next transaction writes

	mu   sync.Mutex
	done ViewProgress // the rows committed so far
}

// ViewProgress is how much of an index a ViewWriter has committed: Rows
// rows, which are every row of a plan position below Below when Placed
// (each row was added with its plan position, in plan order). A page
// may show those rows as the run's table so far (ViewQuery.Below).
type ViewProgress struct {
	Rows   int
	Below  int
	Placed bool
}

// Progress is what the writer has committed so far; safe to call while
// another goroutine writes.
func (w *ViewWriter) Progress() ViewProgress {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.done
}

// viewChunk is how many sessions one transaction of a ViewWriter writes.
// The first writes fewer (firstViewChunk, doubling), so a page of the
// rows written so far (ViewProgress) is there within moments of the start.
const (
	viewChunk      = 2000
	firstViewChunk = 64
)

// WriteView starts writing a run's index, dropping the one it had. The
// writer holds a connection of its own until Close.
func (s *Store) WriteView(ctx context.Context, runID string) (*ViewWriter, error) {
	if err := s.prepareView(ctx); err != nil {
		return nil, err
	}
	c, err := s.db.Conn(ctx)
	if err != nil {
		return nil, s.fail(err)
	}
	w := &ViewWriter{s: s, c: c, runID: runID, last: -1, chunk: firstViewChunk, done: ViewProgress{Placed: true}}
	if err := w.start(ctx); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// start sizes the writer's page cache and drops the run's old index.
func (w *ViewWriter) start(ctx context.Context) error {
	s := w.s
	// Its inserts want no more cache than a run's writer has: its pages
	// are the index's last ones and the OS caches the rest, and while the
	// viewer scores a run this cache and the reading connection's are
	// held at once (at a reader's size, two more megabytes of RSS for each
	// megabyte of cache).
	if !s.db.d.postgres() {
		if _, err := w.c.ExecContext(ctx, `PRAGMA cache_size = `+strconv.Itoa(-writerCacheKB)); err != nil {
			return s.fail(err)
		}
	}
	// When the run's rows are the table's only ones, the table is emptied
	// whole, which SQLite does without visiting each row and each entry
	// of its indexes (deleting a million-session run's rows one at a
	// time took 110 s).
	var others bool
	if err := w.c.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM view_sessions WHERE run_id < $1) OR EXISTS (SELECT 1 FROM view_sessions WHERE run_id > $1)`,
		w.runID).Scan(&others); err != nil {
		return s.fail(err)
	}
	drop, args := `DELETE FROM view_sessions`, []any(nil)
	if others {
		drop, args = `DELETE FROM view_sessions WHERE run_id = $1`, []any{w.runID}
	}
	if _, err := w.c.ExecContext(ctx, `DELETE FROM view_runs WHERE run_id = $1`, w.runID); err != nil {
		return s.fail(err)
	}
	if _, err := w.c.ExecContext(ctx, drop, args...); err != nil {
		return s.fail(err)
	}
	return nil
}

// Close ends the writer (Finish does not): its connection is closed
// rather than kept in the pool, its page cache being sized for the writer.
func (w *ViewWriter) Close() {
	w.c.Raw(func(any) error { return driver.ErrBadConn }) // closes it
}

// cleanText makes model text storable in a TEXT column of either
// database: valid UTF-8, no NUL, and short (the table shows a selection,
// not an essay).
func cleanText(v string) string {
	v = strings.ToValidUTF8(v, "\uFFFD")
	v = strings.ReplaceAll(v, "\x00", "\uFFFD")
	if len(v) > 200 {
		cut := 200
		for cut > 0 && !utf8.RuneStart(v[cut]) {
			cut--
		}
		v = v[:cut] + "…"
	}
	return v
}

// Add queues one session's row, writing a chunk when enough are queued.
func (w *ViewWriter) Add(ctx context.Context, v ViewSession) error {
	if v.Status == "" || v.Seq <= w.last {
		w.unplaced = true
	}
	w.last = v.Seq
	w.rows = append(w.rows, v)
	if len(w.rows) >= w.chunk {
		w.chunk = min(2*w.chunk, viewChunk)
		return w.flush(ctx)
	}
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (w *ViewWriter) flush(ctx context.Context) error {
	if len(w.rows) == 0 {
		return nil
	}
	b := newBulk("view_sessions", "", "run_id", "session_id", "seq", "status", "attempts", "case_id", "branch", "assignment", "profile_order", "item",
		"first_sel", "first_status", "final_sel", "final_status", "reversal", "correction", "update_observed",
		"contradiction", "failure", "transport", "parse_failure", "discordant", "direction", "pair", "triggers")
	for _, v := range w.rows {
		b.add(w.runID, v.ID, v.Seq, v.Status, v.Attempts, cleanText(v.Case), cleanText(v.Branch), v.Assignment, v.Order, cleanText(v.Item),
			cleanText(v.First), v.FirstStatus, cleanText(v.Final), v.FinalStatus, v.Reversal, v.Correction, v.UpdateObserved,
			b2i(v.Contradiction), b2i(v.Failure), b2i(v.Transport), b2i(v.ParseFailure), b2i(v.Discordant), cleanText(v.Direction), v.Pair,
			triggerList(v.Triggers))
	}
	tx, err := w.c.BeginTx(ctx, nil)
	if err != nil {
		return w.s.fail(err)
	}
	defer tx.Rollback()
	if err := w.s.execBulk(ctx, tx, b); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return w.s.fail(err)
	}
	w.mu.Lock()
	w.done.Rows += len(w.rows)
	w.done.Below = w.rows[len(w.rows)-1].Seq + 1
	w.done.Placed = w.done.Placed && !w.unplaced
	w.mu.Unlock()
	w.rows = w.rows[:0]
	return nil
}

// Mark sets a flag ("failure" or "discordant") on the listed sessions
// already added: for flags known only once every session has been seen
// (the decision's triggers, the pairs).
func (w *ViewWriter) Mark(ctx context.Context, flag string, ids []string) error {
	if flag != "failure" && flag != "discordant" {
		return fmt.Errorf("store: no flag %q to mark", flag)
	}
	if err := w.flush(ctx); err != nil {
		return err
	}
	for start := 0; start < len(ids); start += 500 {
		chunk := ids[start:min(start+500, len(ids))]
		in, args := inList(chunk, w.runID)
		if _, err := w.c.ExecContext(ctx, `UPDATE view_sessions SET `+flag+` = 1 WHERE run_id = $1 AND session_id IN (`+in+`)`, args...); err != nil {
			return w.s.fail(err)
		}
	}
	return nil
}

// MarkTrigger marks the listed sessions already added as failures with
// the trigger key: for a trigger known only once every session has been
// scored (a reviewer-agreed exception).
func (w *ViewWriter) MarkTrigger(ctx context.Context, key string, ids []string) error {
	if err := w.flush(ctx); err != nil {
		return err
	}
	for start := 0; start < len(ids); start += 500 {
		chunk := ids[start:min(start+500, len(ids))]
		in, args := inList(chunk, " "+key+" ", w.runID)
		if _, err := w.c.ExecContext(ctx, `UPDATE view_sessions SET failure = 1, triggers = triggers || $1 WHERE run_id = $2 AND session_id IN (`+in+`)`, args...); err != nil {
			return w.s.fail(err)
		}
	}
	return nil
}

// triggerList is the stored form of a session's trigger keys: each between
// spaces, so that a filter matches whole keys.
func triggerList(keys string) string {
	f := strings.Fields(keys)
	if len(f) == 0 {
		return ""
	}
	return " " + strings.Join(f, "  ") + " "
}

// Count is how many of the rows written so far carry flag.
func (w *ViewWriter) Count(ctx context.Context, flag string) (int, error) {
	if flag != "failure" && flag != "discordant" {
		return 0, fmt.Errorf("store: no flag %q to count", flag)
	}
	if err := w.flush(ctx); err != nil {
		return 0, err
	}
	var n int
	if err := w.c.QueryRowContext(ctx, `SELECT COUNT(*) FROM view_sessions WHERE run_id = $1 AND `+flag+` = 1`, w.runID).Scan(&n); err != nil {
		return 0, w.s.fail(err)
	}
	return n, nil
}

// Finish writes the last rows, takes the plan position, stored status and
// attempts of rows added without them from the sessions table (rows whose
// session is not stored are dropped), then stores the headline on its
// basis.
func (w *ViewWriter) Finish(ctx context.Context, basis string, headline []byte) error {
	if err := w.flush(ctx); err != nil {
		return err
	}
	s := w.s
	tx, err := w.c.BeginTx(ctx, nil)
	if err != nil {
		return s.fail(err)
	}
	defer tx.Rollback()
	for _, q := range []string{
		`DELETE FROM view_sessions WHERE run_id = $1 AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.run_id = view_sessions.run_id AND s.session_id = view_sessions.session_id)`,
		`UPDATE view_sessions SET (seq, status, attempts) = (SELECT s.seq, s.status, s.attempts FROM sessions s
			WHERE s.run_id = view_sessions.run_id AND s.session_id = view_sessions.session_id) WHERE run_id = $1`,
	} {
		if !w.unplaced {
			break // every row came from a stored session, placed
		}
		if _, err := tx.ExecContext(ctx, q, w.runID); err != nil {
			return s.fail(err)
		}
	}
	n := w.Progress().Rows
	if w.unplaced {
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM view_sessions WHERE run_id = $1`, w.runID).Scan(&n); err != nil {
			return s.fail(err)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO view_runs (run_id, basis, sessions, headline) VALUES ($1, $2, $3, $4)`,
		w.runID, basis, n, string(headline)); err != nil {
		return s.fail(err)
	}
	if err := tx.Commit(); err != nil {
		return s.fail(err)
	}
	// Statistics for the planner, so a page combining filters reads the
	// most selective index (PostgreSQL's autovacuum would in time; SQLite
	// never would). SQLite samples rather than reads every row.
	analyze := `ANALYZE view_sessions`
	if !s.db.d.postgres() {
		analyze = `PRAGMA analysis_limit = 1000; ` + analyze
	}
	if _, err := w.c.ExecContext(ctx, analyze); err != nil {
		return s.fail(err)
	}
	return nil
}

// ViewQuery selects, orders and pages the sessions of an indexed run.
type ViewQuery struct {
	Case, Branch, Assignment, Order, Item, Status, Direction string
	// Trigger keeps the sessions with the decision trigger of this key.
	Trigger                                                   string
	FirstStatus, FinalStatus, Reversal, Correction            string
	Failures, Reversals, Discordant, ParseFailures, Transport bool
	Unreviewed, Contradiction                                 bool
	// Search keeps sessions with a message whose content or refusal holds
	// this text exactly (case-sensitive), answered by the database.
	Search string
	// Below, when positive, keeps the sessions at plan positions below it:
	// an index being written answers for the rows it has committed
	// (ViewProgress.Below).
	Below int
	// Sort is a ViewColumns key ("" is plan order); Desc reverses it.
	Sort string
	Desc bool
	// After and Before are cursors (ViewPage.Next, ViewPage.Prev): the
	// page starts after, or ends before, the row they name. Paging is by
	// key, never by offset, so a page deep in a big run costs what the
	// first does.
	After, Before string
	Limit         int
	// NoCount leaves the count out (Total -1): for a caller that knows it.
	NoCount bool
	// ReversalIn, when set, keeps the sessions whose reversal is one of
	// these values: the protocol names them (a reversal rate's
	// denominator, say), the store knows none.
	ReversalIn []string
}

// ViewColumns are the sortable columns, by the key a ViewQuery names.
var ViewColumns = map[string]string{
	"seq": "c.seq", "session": "c.session_id", "case": "c.case_id", "branch": "c.branch", "assignment": "c.assignment",
	"order": "c.profile_order", "item": "c.item", "status": "c.status", "attempts": "c.attempts",
	"first": "c.first_sel", "first_status": "c.first_status", "final": "c.final_sel", "final_status": "c.final_status",
	"reversal": "c.reversal", "correction": "c.correction", "update": "c.update_observed", "contradiction": "c.contradiction",
	"direction": "c.direction", "pair": "c.pair", "review": reviewExpr,
}

// intColumns are the ViewColumns that hold numbers.
var intColumns = map[string]bool{"seq": true, "attempts": true, "contradiction": true}

const reviewExpr = `(CASE
  WHEN EXISTS (SELECT 1 FROM review_adjudications a WHERE a.run_id = c.run_id AND a.session_id = c.session_id) THEN 'adjudicated'
  WHEN (SELECT COUNT(*) FROM review_codes r WHERE r.run_id = c.run_id AND r.session_id = c.session_id) >= 2 THEN 'coded by both'
  WHEN EXISTS (SELECT 1 FROM review_codes r WHERE r.run_id = c.run_id AND r.session_id = c.session_id) THEN 'coded by one'
  WHEN EXISTS (SELECT 1 FROM review_items i WHERE i.run_id = c.run_id AND i.session_id = c.session_id) THEN 'sampled'
  ELSE '' END)`

// ViewPage is one page of a ViewQuery.
type ViewPage struct {
	Rows []ViewSession
	// Next and Prev are cursors for the pages after and before ("" at an
	// end).
	Next, Prev string
	// Total counts the matching sessions up to CountCap; Capped says there
	// are more. A text search is not counted (Total -1).
	Total  int
	Capped bool
}

// CountCap bounds how far a page counts the sessions that match.
const CountCap = 10000

func (q ViewQuery) where(d dialect, runID string) (string, []any) {
	var p params
	conds := []string{"c.run_id = " + p.add(runID)}
	if q.Below > 0 {
		conds = append(conds, "c.seq < "+p.add(q.Below))
	}
	if len(q.ReversalIn) > 0 {
		in := make([]string, len(q.ReversalIn))
		for i, v := range q.ReversalIn {
			in[i] = p.add(v)
		}
		conds = append(conds, "c.reversal IN ("+strings.Join(in, ", ")+")")
	}
	if q.Trigger != "" {
		conds = append(conds, "c.failure = 1", "c.triggers LIKE "+p.add("% "+strings.NewReplacer("%", "", "_", "").Replace(q.Trigger)+" %"))
	}
	for _, c := range []struct{ col, v string }{
		{"c.case_id", q.Case}, {"c.branch", q.Branch}, {"c.assignment", q.Assignment}, {"c.profile_order", q.Order},
		{"c.item", q.Item}, {"c.status", q.Status}, {"c.direction", q.Direction},
		{"c.first_status", q.FirstStatus}, {"c.final_status", q.FinalStatus}, {"c.reversal", q.Reversal}, {"c.correction", q.Correction},
	} {
		if c.v != "" {
			conds = append(conds, c.col+" = "+p.add(c.v))
		}
	}
	for _, c := range []struct {
		on   bool
		cond string
	}{
		{q.Failures, "c.failure = 1"}, {q.Reversals, "c.reversal = 'yes'"}, {q.Discordant, "c.discordant = 1"},
		{q.ParseFailures, "c.parse_failure = 1"}, {q.Transport, "c.transport = 1"}, {q.Contradiction, "c.contradiction = 1"},
		{q.Unreviewed, "NOT EXISTS (SELECT 1 FROM review_codes r WHERE r.run_id = c.run_id AND r.session_id = c.session_id)"},
	} {
		if c.on {
			conds = append(conds, c.cond)
		}
	}
	if q.Search != "" {
		// content and refusal may hold any bytes (d.text): the search is a
		// byte substring on both databases.
		text := p.add(d.text(q.Search))
		conds = append(conds, `EXISTS (SELECT 1 FROM messages m WHERE m.run_id = c.run_id
			AND m.schedule_pos IN (SELECT s.schedule_pos FROM sessions s WHERE s.run_id = c.run_id AND s.session_id = c.session_id) AND m.session_id = c.session_id
			AND (`+d.contains("m.content", text)+` OR `+d.contains("m.refusal", text)+`))`)
	}
	return strings.Join(conds, " AND "), p
}

// cursor is a row's place in an order: its sort value and plan position.
func cursor(key string, v ViewSession, review string) string {
	var val string
	switch key {
	case "", "seq":
		val = ""
	default:
		val = viewValue(key, v, review)
	}
	return strconv.Itoa(v.Seq) + ":" + val
}

func viewValue(key string, v ViewSession, review string) string {
	switch key {
	case "session":
		return v.ID
	case "case":
		return v.Case
	case "branch":
		return v.Branch
	case "assignment":
		return v.Assignment
	case "order":
		return v.Order
	case "item":
		return v.Item
	case "status":
		return v.Status
	case "attempts":
		return strconv.Itoa(v.Attempts)
	case "first":
		return v.First
	case "first_status":
		return v.FirstStatus
	case "final":
		return v.Final
	case "final_status":
		return v.FinalStatus
	case "reversal":
		return v.Reversal
	case "correction":
		return v.Correction
	case "update":
		return v.UpdateObserved
	case "contradiction":
		return strconv.Itoa(b2i(v.Contradiction))
	case "direction":
		return v.Direction
	case "pair":
		return v.Pair
	case "review":
		return review
	}
	return ""
}

// ViewSessions answers a ViewQuery on an indexed run.
func (s *Store) ViewSessions(ctx context.Context, runID string, q ViewQuery) (ViewPage, error) {
	key := q.Sort
	if key == "" {
		key = "seq"
	}
	col, ok := ViewColumns[key]
	if !ok {
		return ViewPage{}, fmt.Errorf("store: no session column %q to sort by", q.Sort)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 50
	}
	where, args := q.where(s.db.d, runID)
	countWhere, countArgs := where, append([]any(nil), args...)
	// The order: the column, then plan position; backwards to page back.
	desc := q.Desc
	cur, back := q.After, false
	if q.Before != "" {
		cur, back = q.Before, true
	}
	if cur != "" {
		seqS, val, _ := strings.Cut(cur, ":")
		seq, err := strconv.Atoi(seqS)
		if err != nil {
			return ViewPage{}, fmt.Errorf("store: bad page cursor %q", cur)
		}
		// Rows after the cursor in the order asked (before it, paging back).
		op := ">"
		if desc != back {
			op = "<"
		}
		if key == "seq" {
			where += " AND c.seq " + op + " " + placeholders(len(args)+1, 1)
			args = append(args, seq)
		} else {
			var v any = val
			if intColumns[key] {
				n, err := strconv.Atoi(val)
				if err != nil {
					return ViewPage{}, fmt.Errorf("store: bad page cursor %q", cur)
				}
				v = n
			}
			where += " AND (" + col + ", c.seq) " + op + " (" + placeholders(len(args)+1, 2) + ")"
			args = append(args, v, seq)
		}
	}
	dir := "ASC"
	if desc != back {
		dir = "DESC"
	}
	order := col + " " + dir + ", c.seq " + dir
	if key == "seq" {
		order = "c.seq " + dir
	}
	query := `SELECT ` + viewCols + `
		FROM view_sessions c WHERE ` + where + ` ORDER BY ` + order + ` LIMIT ` + placeholders(len(args)+1, 1)
	rows, err := s.db.QueryContext(ctx, query, append(args, limit+1)...)
	if err != nil {
		return ViewPage{}, s.fail(err)
	}
	defer rows.Close()
	var out []ViewSession
	for rows.Next() {
		v, err := scanView(rows)
		if err != nil {
			return ViewPage{}, s.fail(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return ViewPage{}, s.fail(err)
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	if back {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	p := ViewPage{Rows: out, Total: -1}
	if p.Rows == nil {
		p.Rows = []ViewSession{}
	}
	if len(out) > 0 {
		first, last := cursor(key, out[0], out[0].Review), cursor(key, out[len(out)-1], out[len(out)-1].Review)
		switch {
		case back:
			p.Next = last
			if more {
				p.Prev = first
			}
		default:
			if more {
				p.Next = last
			}
			if cur != "" {
				p.Prev = first
			}
		}
	}
	if q.Search == "" && !q.NoCount {
		var n int
		if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM view_sessions c WHERE `+countWhere+` LIMIT `+placeholders(len(countArgs)+1, 1)+`) x`,
			append(countArgs, CountCap+1)...).Scan(&n); err != nil {
			return ViewPage{}, s.fail(err)
		}
		p.Total, p.Capped = min(n, CountCap), n > CountCap
	}
	return p, nil
}

// ViewSessionOf reads one session's row of an indexed run.
func (s *Store) ViewSessionOf(ctx context.Context, runID, id string) (ViewSession, bool, error) {
	p, err := s.viewByID(ctx, runID, id)
	if err != nil || len(p) == 0 {
		return ViewSession{}, false, err
	}
	return p[0], true, nil
}

func (s *Store) viewByID(ctx context.Context, runID, id string) ([]ViewSession, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+viewCols+`
		FROM view_sessions c WHERE c.run_id = $1 AND c.session_id = $2`, runID, id)
	if err != nil {
		return nil, s.fail(err)
	}
	defer rows.Close()
	var out []ViewSession
	for rows.Next() {
		v, err := scanView(rows)
		if err != nil {
			return nil, s.fail(err)
		}
		out = append(out, v)
	}
	return out, s.fail(rows.Err())
}

// PrepareView creates the viewer index's tables and their indexes: at
// once on any store (PrepareBrowse's indexes of the sessions table take a
// while on a large one).
func (s *Store) PrepareView(ctx context.Context) error { return s.prepareView(ctx) }

// prepareView creates the index's tables and their indexes. An index
// written by an older budge, without the triggers column, is dropped
// first: it is derived data, written again when a run is viewed.
func (s *Store) prepareView(ctx context.Context) error {
	var one string
	err := s.db.QueryRowContext(ctx, `SELECT triggers FROM view_sessions LIMIT 1`).Scan(&one)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		if _, err := s.db.ExecContext(ctx, `DROP TABLE IF EXISTS view_sessions; DROP TABLE IF EXISTS view_runs`); err != nil {
			return fmt.Errorf("store: viewer index tables: %w", err)
		}
	}
	if err := execDDL(ctx, s.db, s.db.d, "view"); err != nil {
		return fmt.Errorf("store: viewer index tables: %w", err)
	}
	return nil
}

// viewCols are the columns scanView reads, in its order.
const viewCols = `c.session_id, c.seq, c.status, c.attempts, c.case_id, c.branch, c.assignment, c.profile_order, c.item,
	c.first_sel, c.first_status, c.final_sel, c.final_status, c.reversal, c.correction, c.update_observed,
	c.contradiction, c.failure, c.transport, c.parse_failure, c.discordant, c.direction, c.pair, c.triggers, ` + reviewExpr

func scanView(sc rowScanner) (ViewSession, error) {
	var v ViewSession
	var contra, fail, tr, pf, disc int
	err := sc.Scan(&v.ID, &v.Seq, &v.Status, &v.Attempts, &v.Case, &v.Branch, &v.Assignment, &v.Order, &v.Item,
		&v.First, &v.FirstStatus, &v.Final, &v.FinalStatus, &v.Reversal, &v.Correction, &v.UpdateObserved,
		&contra, &fail, &tr, &pf, &disc, &v.Direction, &v.Pair, &v.Triggers, &v.Review)
	v.Contradiction, v.Failure, v.Transport, v.ParseFailure, v.Discordant = contra == 1, fail == 1, tr == 1, pf == 1, disc == 1
	v.Triggers = strings.Join(strings.Fields(v.Triggers), " ")
	return v, err
}
