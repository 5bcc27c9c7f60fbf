package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/buildlab/budge/limits"
)

// WriteSessions stores finished sessions, their attempts, messages and
// artifacts in one transaction: a session is either wholly stored or not at
// all. A session already stored is never overwritten; writing it again is an
// error.
func (s *Store) WriteSessions(ctx context.Context, runID string, sessions []Session) error {
	return s.writeSessions(ctx, runID, sessions, nil)
}

// writeSessions is WriteSessions; guard, when set, runs first in the
// transaction and returns the sessions to write (a worker's check that it
// still holds their cells) and log lines to append in the transaction,
// last.
func (s *Store) writeSessions(ctx context.Context, runID string, sessions []Session,
	guard func(ctx context.Context, tx *txn, sessions []Session) ([]Session, []byte, error)) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.fail(err)
	}
	defer tx.Rollback()
	var lines []byte
	if guard != nil {
		if sessions, lines, err = guard(ctx, tx, sessions); err != nil {
			return err
		}
	}
	sess := newBulk("sessions", "", "run_id", "session_id", "seq", "schedule_pos", "spec", "status", "started", "finished",
		"stop_reason", "failed_phase", "failure_kind", "failure_message", "attempts", "failed_attempts", "input_tokens", "output_tokens", "trace_sha256")
	atts := attemptBulk("")
	msgs := newBulk("messages", "", "run_id", "schedule_pos", "session_id", "seq", "phase", "role", "content", "tool_calls", "tool_call_id", "name", "refusal")
	for _, se := range sessions {
		failed := 0
		for _, a := range se.Attempts {
			if a.Outcome != "ok" {
				failed++
			}
			atts.addAttempt(runID, se.SchedulePos, se.ID, a)
		}
		if se.Status == SessionInterrupted {
			// Only the attempts of an interrupted session are kept: the cell
			// stays missing until a resumed run completes it.
			continue
		}
		sess.add(runID, se.ID, se.Seq, se.SchedulePos, string(se.Spec), se.Status,
			ts(se.Started), ts(se.Finished), se.Stop, se.FailedPhase, se.FailureKind, se.FailureMsg,
			len(se.Attempts), failed, se.InputTokens, se.OutputTokens, se.TraceSHA)
		for i, m := range se.Messages {
			calls := ""
			if len(m.ToolCalls) > 0 {
				b, _ := json.Marshal(m.ToolCalls)
				calls = string(b)
			}
			msgs.add(runID, se.SchedulePos, se.ID, i, m.Phase, string(m.Role), m.Content, calls, m.ToolCallID, m.Name, m.Refusal)
		}
	}
	// Rows first, artifacts last: on SQLite the transaction's first
	// statement then takes the write lock, and the artifact lookups that
	// follow read the database as it is (a lookup first would read a
	// snapshot another connection's write may have made stale by the time
	// of the insert, which SQLite then refuses).
	for _, b := range []*bulk{sess, atts, msgs} {
		if err := s.execBulk(ctx, tx, b); err != nil {
			if errors.Is(err, ErrAlreadyStored) {
				return fmt.Errorf("run %s: %w; is another budge writing this run? Only the holder of its lease may (AcquireLease)", runID, err)
			}
			return err
		}
	}
	if err := adoptUnplaced(ctx, tx, runID, sessions); err != nil {
		return s.fail(err)
	}
	var committed func()
	if len(sess.args)+len(atts.args) > 0 {
		// Only sessions and attempts refer to artifacts.
		if committed, err = s.arts.put(ctx, tx, runID, sessions); err != nil {
			return err
		}
	}
	if err := s.logs.appendTx(ctx, tx, runID, lines); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return s.named(fmt.Errorf("store: commit: %w", err))
	}
	if committed != nil {
		committed()
	}
	s.checkpointSoon()
	return nil
}

// adoptUnplaced moves the attempts a resumed session's earlier
// incarnations left at schedule position -1 (stored by a run without
// cells, before attempts were kept by schedule position, and copied by
// the migration without one) to the session's position, where reading the
// session finds them. Only a resumed session (incarnation past 1) can have
// any; for each, it is one look at the run's few such rows.
func adoptUnplaced(ctx context.Context, tx *txn, runID string, sessions []Session) error {
	for _, se := range sessions {
		if se.Incarnation <= 1 || se.SchedulePos == unplaced {
			continue
		}
		if _, err := tx.ExecContext(ctx, `UPDATE attempts SET schedule_pos = $1 WHERE run_id = $2 AND schedule_pos = $3 AND session_id = $4`,
			se.SchedulePos, runID, unplaced, se.ID); err != nil {
			return err
		}
	}
	return nil
}

// unplaced is the schedule position of attempts the migration to schema
// version 8 found no position for.
const unplaced = -1

// artifactBulk collects rows of the artifact index, with the extra columns
// a dialect's table has (a SQLite run's generation).
func artifactBulk(suffix string, extra ...string) *bulk {
	return newBulk("artifacts", suffix, append([]string{"run_id", "sha256", "pack", "pack_offset", "length", "encoding"}, extra...)...)
}

// ErrAlreadyStored is returned by WriteSessions for a session (or attempt)
// that is stored already: a stored session is never overwritten.
var ErrAlreadyStored = errors.New("already stored")

// bulk collects rows for one table and inserts them with multi-row INSERT
// statements: one statement per chunk of rows instead of one per row.
type bulk struct {
	table, suffix string
	cols          []string
	args          []any
}

func newBulk(table, suffix string, cols ...string) *bulk {
	return &bulk{table: table, suffix: suffix, cols: cols}
}

func (b *bulk) add(vals ...any) { b.args = append(b.args, vals...) }

// attemptBulk collects rows of the attempts table; suffix is as newBulk's.
func attemptBulk(suffix string) *bulk {
	return newBulk("attempts", suffix, "run_id", "schedule_pos", "session_id", "incarnation", "call", "attempt", "phase", "started", "duration_ms", "outcome",
		"error_kind", "error_message", "http_status", "request_sha256", "response_sha256", "input_tokens", "output_tokens", "model_id", "fingerprint", "request_id", "finish_reason")
}

// addAttempt adds one attempt of a session to an attemptBulk.
func (b *bulk) addAttempt(runID string, pos int, sessionID string, a Attempt) {
	b.add(runID, pos, sessionID, a.Incarnation, a.Call, a.Attempt, a.Phase, ts(a.Started), a.DurationMS, a.Outcome,
		a.ErrorKind, a.ErrorMsg, a.HTTPStatus, a.RequestSHA, a.ResponseSHA, a.InputTokens, a.OutputTokens,
		a.ModelID, a.Fingerprint, a.RequestID, a.FinishReason)
}

// chunkRows is how many rows one INSERT carries; it keeps the bound
// parameters under SQLite's (and PostgreSQL's) limits for every table.
const chunkRows = 64

func (s *Store) execBulk(ctx context.Context, tx *txn, b *bulk) error {
	s.db.d.bindText(b)
	n := len(b.cols)
	for start := 0; start < len(b.args); start += chunkRows * n {
		end := min(start+chunkRows*n, len(b.args))
		if err := s.insertRows(ctx, tx, b, (end-start)/n, b.args[start:end]); err != nil {
			if c := corrupt(s.db.path, err); c != nil {
				return c
			}
			if isConstraint(err) {
				return fmt.Errorf("store: inserting into %s: %w (%v)", b.table, ErrAlreadyStored, err)
			}
			return fmt.Errorf("store: inserting into %s: %w", b.table, err)
		}
	}
	return nil
}

// insertRows inserts rows rows of args into b's table. On SQLite through
// a statement the store prepared; on PostgreSQL as a plain statement, which
// pgx itself prepares once on each connection and caches (preparing it
// through database/sql too would prepare it twice).
func (s *Store) insertRows(ctx context.Context, tx *txn, b *bulk, rows int, args []any) error {
	if s.db.d.postgres() {
		_, err := tx.ExecContext(ctx, insertSQL(s.db.d, "INSERT", b, rows), args...)
		return err
	}
	st, err := s.insertStmt(ctx, b, rows)
	if err != nil {
		return err
	}
	_, err = tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	return err
}

// sqliteInsert is how the store's multi-row inserts begin on SQLite. OR
// FAIL instead of the default ABORT: a statement that may abort halfway
// makes SQLite copy every page it touches that the transaction had already
// changed into a statement journal, to undo only that statement, and that
// copying was a tenth of a million-session run's time. Every caller rolls
// back the whole transaction on an error, so nothing a failed statement
// wrote before it stopped is ever committed.
const sqliteInsert = "INSERT OR FAIL"

// insertSQL is the INSERT of rows rows into b's table, beginning with verb.
func insertSQL(d dialect, verb string, b *bulk, rows int) string {
	n := len(b.cols)
	var q strings.Builder
	q.WriteString(verb + " INTO " + b.table + " (" + strings.Join(b.cols, ", ") + ") VALUES ")
	for i := 0; i < rows; i++ {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(" + d.bulkPlaceholders(i*n+1, n) + ")")
	}
	if b.suffix != "" {
		q.WriteString(" " + b.suffix)
	}
	return q.String()
}

// insertStmt returns a prepared INSERT of rows rows into b's table, prepared
// once per store: parsing the SQL again for every batch was a measurable
// share of the writer's time.
func (s *Store) insertStmt(ctx context.Context, b *bulk, rows int) (*sql.Stmt, error) {
	key := fmt.Sprintf("%s/%d", b.table, rows)
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if st, ok := s.stmts[key]; ok {
		return st, nil
	}
	st, err := s.db.PrepareContext(ctx, insertSQL(s.db.d, sqliteInsert, b, rows))
	if err != nil {
		return nil, fmt.Errorf("store: preparing insert into %s: %w", b.table, err)
	}
	s.stmts[key] = st
	return st, nil
}

// timeLayout has a fixed number of fractional digits so that stored times
// sort as text in time order (RFC3339Nano drops trailing zeros).
const timeLayout = "2006-01-02T15:04:05.000000000Z07:00"

func ts(t time.Time) string { return t.UTC().Format(timeLayout) }

// Sessions loads every stored session of a run with attempts and messages,
// in canonical (plan) order.
func (s *Store) Sessions(ctx context.Context, runID string) ([]Session, error) {
	return loadSessionsWhere(ctx, s.db, `run_id = $1`, []any{runID}, `run_id = $1`, []any{runID})
}

// ErrNoSession is returned by Session for an id the run does not hold.
var ErrNoSession = errors.New("store: no such session")

// Session reads one stored session with its attempts and messages.
func (s *Store) Session(ctx context.Context, runID, id string) (Session, error) {
	out, err := loadSessionsWhere(ctx, s.db, `run_id = $1 AND session_id = $2`, []any{runID, id},
		`run_id = $1 AND schedule_pos IN (SELECT schedule_pos FROM sessions WHERE run_id = $1 AND session_id = $2) AND session_id = $2`,
		[]any{runID, id})
	if err != nil {
		return Session{}, err
	}
	if len(out) == 0 {
		return Session{}, fmt.Errorf("%w: %s in run %s", ErrNoSession, id, runID)
	}
	return out[0], nil
}

// loadSessionsWhere reads from q the sessions cond selects, in plan
// order, and their attempts and messages, which childCond selects: by the
// schedule positions of the sessions, which is how those tables are keyed.
func loadSessionsWhere(ctx context.Context, q querier, cond string, args []any, childCond string, childArgs []any) ([]Session, error) {
	out, err := queryAll(ctx, q, scanSession, `SELECT `+sessionCols+` FROM sessions WHERE `+cond+` ORDER BY seq`, args...)
	if err != nil || len(out) == 0 {
		return out, err
	}
	index := make(map[string]*Session, len(out))
	for i := range out {
		index[out[i].ID] = &out[i]
	}
	err = queryEach(ctx, q, scanAttempt, func(a sessionAttempt) {
		if se := index[a.session]; se != nil {
			se.Attempts = append(se.Attempts, a.Attempt)
		}
	}, `SELECT `+attemptCols+` FROM attempts WHERE `+childCond+` ORDER BY schedule_pos, session_id, incarnation, call, attempt`, childArgs...)
	if err != nil {
		return nil, err
	}
	err = queryEach(ctx, q, scanMessage, func(m sessionMessage) {
		if se := index[m.session]; se != nil {
			se.Messages = append(se.Messages, m.Entry)
		}
	}, `SELECT `+messageCols+` FROM messages WHERE `+childCond+` ORDER BY schedule_pos, session_id, seq`, childArgs...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// EachSessions reads a run's stored sessions in plan order, with their
// attempts and messages, and hands them to fn a batch of at most size
// sessions at a time (a batch covers size plan positions, so it may hold
// fewer). Only one batch is in memory at once, however large the run, and
// a batch holds about limits.MaxPendingBytes of transcripts at most: the
// first covers few positions, and the next are sized by what the sessions
// read so far hold (a run whose sessions hold megabytes each is read a few
// dozen at a time).
func (s *Store) EachSessions(ctx context.Context, runID string, size int, fn func([]Session) error) error {
	if size < 1 {
		size = 1024
	}
	// One connection reads the whole run: its page cache holds the
	// tables' upper pages once, rather than each connection of the pool
	// keeping its own copy while it takes turns with the others.
	c, err := s.db.Conn(ctx)
	if err != nil {
		return s.fail(err)
	}
	defer c.Close()
	var last int
	if err := c.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), -1) FROM sessions WHERE run_id = $1`, runID).Scan(&last); err != nil {
		return err
	}
	const probe = 8
	var read, held int64 // sessions read so far, and the bytes they held
	for lo := 0; lo <= last; {
		n := min(size, probe)
		if read > 0 {
			n = int(min(int64(size), max(1, limits.MaxPendingBytes*read/max(held, 1))))
		}
		batch, err := loadSessionsWhere(ctx, c, `run_id = $1 AND seq >= $2 AND seq < $3`, []any{runID, lo, lo + n},
			`run_id = $1 AND schedule_pos IN (SELECT schedule_pos FROM sessions WHERE run_id = $2 AND seq >= $3 AND seq < $4)`,
			[]any{runID, runID, lo, lo + n})
		if err != nil {
			return err
		}
		lo += n
		for _, se := range batch {
			read++
			held += transcriptBytes(se)
		}
		if len(batch) > 0 {
			if err := fn(batch); err != nil {
				return err
			}
		}
	}
	return nil
}

// transcriptBytes is about what a loaded session holds.
func transcriptBytes(se Session) int64 {
	n := int64(len(se.Spec) + 256*len(se.Attempts))
	for _, m := range se.Messages {
		n += int64(len(m.Content) + len(m.Refusal) + 64)
		for _, tc := range m.ToolCalls {
			n += int64(len(tc.Arguments) + len(tc.Name) + len(tc.ID))
		}
	}
	return n
}

// StoredIDs returns the ids of sessions already stored for a run, with
// their status.
func (s *Store) StoredIDs(ctx context.Context, runID string) (map[string]string, error) {
	return queryMap[string](ctx, s.db, `SELECT session_id, status FROM sessions WHERE run_id = $1`, runID)
}

// EachStoredSeq hands fn the plan position (seq) of every session a run
// has stored, one row at a time: a resume learns what is left without
// holding the run's session ids.
func (s *Store) EachStoredSeq(ctx context.Context, runID string, fn func(seq int)) error {
	return queryEach(ctx, s.db, func(r rowScanner) (int, error) {
		var seq int
		err := r.Scan(&seq)
		return seq, err
	}, fn, `SELECT seq FROM sessions WHERE run_id = $1`, runID)
}

// FailedKinds returns the failure kind of every session of a run stored
// as failed, by session id.
func (s *Store) FailedKinds(ctx context.Context, runID string) (map[string]string, error) {
	return queryMap[string](ctx, s.db, `SELECT session_id, failure_kind FROM sessions WHERE run_id = $1 AND status = $2`, runID, SessionFailed)
}

// Unstore takes stored failed sessions back out of a run, so that a resume
// can run them again as their next incarnation: their session rows and
// messages go, their attempts stay (every attempt is an observation). A
// session that is not stored as failed is refused, so nothing complete is
// ever taken out.
func (s *Store) Unstore(ctx context.Context, runID string, ids []string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer tx.Rollback()
	for _, id := range ids {
		var pos int
		err := tx.QueryRowContext(ctx, `DELETE FROM sessions WHERE run_id = $1 AND session_id = $2 AND status = $3 RETURNING schedule_pos`,
			runID, id, SessionFailed).Scan(&pos)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: run %s: session %s is not stored as failed", runID, id)
		}
		if err != nil {
			return fmt.Errorf("store: run %s: taking back session %s: %w", runID, id, err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM messages WHERE run_id = $1 AND schedule_pos = $2 AND session_id = $3`, runID, pos, id); err != nil {
			return fmt.Errorf("store: run %s: taking back session %s: %w", runID, id, err)
		}
	}
	return tx.Commit()
}

// OrphanAttempts counts attempts stored for sessions that have no session
// row (interrupted sessions), by session id.
func (s *Store) OrphanAttempts(ctx context.Context, runID string) (map[string]int, error) {
	return queryMap[int](ctx, s.db, `SELECT a.session_id, COUNT(*) FROM attempts a
		LEFT JOIN sessions s ON s.run_id = a.run_id AND s.session_id = a.session_id
		WHERE a.run_id = $1 AND s.session_id IS NULL GROUP BY a.session_id`, runID)
}

// Orphans returns the attempts of a run's sessions that were interrupted
// and never stored, by session id: observations all the same, counted with
// their error kinds.
func (s *Store) Orphans(ctx context.Context, runID string) (map[string][]Attempt, error) {
	out := map[string][]Attempt{}
	err := queryEach(ctx, s.db, scanAttempt, func(a sessionAttempt) { out[a.session] = append(out[a.session], a.Attempt) },
		`SELECT `+prefixed("a.", attemptCols)+` FROM attempts a
		LEFT JOIN sessions s ON s.run_id = a.run_id AND s.session_id = a.session_id
		WHERE a.run_id = $1 AND s.session_id IS NULL ORDER BY a.session_id, a.incarnation, a.call, a.attempt`, runID)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// prefixed qualifies each column of a column list with a table alias.
func prefixed(alias, cols string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = alias + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}

// PendingIncarnations returns the highest incarnation stored of each
// session a run has attempts of but has not stored (a kill or a failure
// left it undone): a resume starts it again as the next incarnation, so no
// stored attempt is ever overwritten. It holds as many sessions as were in
// flight, not as many as the run has.
func (s *Store) PendingIncarnations(ctx context.Context, runID string) (map[string]int, error) {
	return queryMap[int](ctx, s.db, `SELECT a.session_id, MAX(a.incarnation) FROM attempts a WHERE a.run_id = $1
		AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.run_id = a.run_id AND s.session_id = a.session_id) GROUP BY a.session_id`, runID)
}

// Responses returns the successful attempts of a run by the sha256 of their
// request: what a replay answers from. When a request was answered more
// than once (a session resumed after its call had been answered), the
// latest incarnation's answer is kept, which is the one its stored
// transcript holds.
func (s *Store) Responses(ctx context.Context, runID string) (map[string]Attempt, error) {
	out := map[string]Attempt{}
	err := queryEach(ctx, s.db, scanAttempt, func(a sessionAttempt) { out[a.RequestSHA] = a.Attempt },
		`SELECT `+attemptCols+` FROM attempts WHERE run_id = $1 AND outcome = 'ok' ORDER BY incarnation, session_id, call, attempt`, runID)
	if err != nil {
		return nil, err
	}
	return out, nil
}
