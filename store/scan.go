package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/buildlab/budge/chat"
)

// Every row type has one column list and one scanner below, and every query
// reads its rows through them: a stored value that does not parse (a
// corrupt JSON column, a bad timestamp) is a *ColumnError naming the row and
// the column, never a zero value passed on as if it had been stored.

// ColumnError is a stored value that cannot be read back.
type ColumnError struct {
	Table  string // the table, "sessions"
	Row    string // which row, "run r1, session s3"
	Column string // the column, "started"
	Err    error
}

func (e *ColumnError) Error() string {
	return fmt.Sprintf("store: %s: %s.%s is corrupt: %v", e.Row, e.Table, e.Column, e.Err)
}

func (e *ColumnError) Unwrap() error { return e.Err }

// rowScanner is a row to scan: *sql.Row or *sql.Rows.
type rowScanner interface {
	Scan(dest ...any) error
}

// querier runs queries: the database or a transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// queryEach scans every row of a query and hands it to fn, in order.
func queryEach[T any](ctx context.Context, q querier, scan func(rowScanner) (T, error), fn func(T), query string, args ...any) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return failQ(q, err)
	}
	defer rows.Close()
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return failQ(q, err)
		}
		fn(v)
	}
	if err := rows.Err(); err != nil {
		return failQ(q, err)
	}
	return nil
}

// queryAll returns every row of a query (none is a nil slice).
func queryAll[T any](ctx context.Context, q querier, scan func(rowScanner) (T, error), query string, args ...any) ([]T, error) {
	var out []T
	err := queryEach(ctx, q, scan, func(v T) { out = append(out, v) }, query, args...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// queryOne returns the one row of a query, and false when there is none.
func queryOne[T any](ctx context.Context, q querier, scan func(rowScanner) (T, error), query string, args ...any) (T, bool, error) {
	v, err := scan(q.QueryRowContext(ctx, query, args...))
	if errors.Is(err, sql.ErrNoRows) {
		var zero T
		return zero, false, nil
	}
	if err != nil {
		return v, false, failQ(q, err)
	}
	return v, true, nil
}

// wrap marks a database error as the store's; a *ColumnError or a
// *CorruptError already says where it comes from.
func wrap(err error) error {
	var ce *ColumnError
	var de *CorruptError
	if err == nil || errors.As(err, &ce) || errors.As(err, &de) {
		return err
	}
	return fmt.Errorf("store: %w", err)
}

// pair is a row of a key and a value: a session's status, a count by
// session.
type pair[V any] struct {
	key string
	val V
}

func scanPair[V any](sc rowScanner) (pair[V], error) {
	var p pair[V]
	err := sc.Scan(&p.key, &p.val)
	return p, err
}

// queryMap reads a query of (key, value) rows into a map.
func queryMap[V any](ctx context.Context, q querier, query string, args ...any) (map[string]V, error) {
	out := map[string]V{}
	err := queryEach(ctx, q, scanPair[V], func(p pair[V]) { out[p.key] = p.val }, query, args...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func scanString(sc rowScanner) (string, error) {
	var s string
	err := sc.Scan(&s)
	return s, err
}

// parser parses the stored text of one row's columns and keeps the first
// failure.
type parser struct {
	table, row string
	err        error
}

func (p *parser) fail(col string, err error) {
	if p.err == nil {
		p.err = &ColumnError{Table: p.table, Row: p.row, Column: col, Err: err}
	}
}

// time parses a stored time (see ts).
func (p *parser) time(col, v string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		p.fail(col, err)
	}
	return t
}

// json checks a stored JSON document; an empty column is no document.
func (p *parser) json(col, v string) json.RawMessage {
	if v == "" {
		return nil
	}
	if !json.Valid([]byte(v)) {
		p.fail(col, fmt.Errorf("not JSON: %.40q", v))
		return nil
	}
	return json.RawMessage(v)
}

// uint parses a stored decimal number.
func (p *parser) uint(col, v string) uint64 {
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		p.fail(col, err)
	}
	return n
}

// runCols are the columns scanRun reads, in its order.
const runCols = `id, protocol, created, finished, status, deck_name, deck_hash, model, seed, sessions_planned, manifest`

func scanRun(sc rowScanner) (Run, error) {
	var r Run
	var created, manifest string
	var finished sql.NullString
	if err := sc.Scan(&r.ID, &r.Protocol, &created, &finished, &r.Status, &r.DeckName, &r.DeckHash, &r.Model, &r.Seed, &r.Planned, &manifest); err != nil {
		return r, err
	}
	p := parser{table: "runs", row: "run " + r.ID}
	r.Created = p.time("created", created)
	if finished.Valid {
		t := p.time("finished", finished.String)
		r.Finished = &t
	}
	r.Manifest = p.json("manifest", manifest)
	return r, p.err
}

// deck is a stored deck snapshot.
type deck struct {
	source  string
	content []byte
}

// deckCols are the columns scanDeck reads, in its order.
const deckCols = `source, content`

func scanDeck(sc rowScanner) (deck, error) {
	var d deck
	var content string
	err := sc.Scan(&d.source, &content)
	d.content = []byte(content)
	return d, err
}

// sessionCols are the columns scanSession reads, in its order.
const sessionCols = `run_id, session_id, seq, schedule_pos, spec, status, started, finished, stop_reason,
	failed_phase, failure_kind, failure_message, input_tokens, output_tokens, trace_sha256`

// scanSession reads a session without its attempts and messages.
func scanSession(sc rowScanner) (Session, error) {
	var se Session
	var runID, spec, started, finished string
	if err := sc.Scan(&runID, &se.ID, &se.Seq, &se.SchedulePos, &spec, &se.Status, &started, &finished, &se.Stop,
		&se.FailedPhase, &se.FailureKind, &se.FailureMsg, &se.InputTokens, &se.OutputTokens, &se.TraceSHA); err != nil {
		return se, err
	}
	p := parser{table: "sessions", row: sessionRow(runID, se.ID)}
	se.Spec = p.json("spec", spec)
	se.Started = p.time("started", started)
	se.Finished = p.time("finished", finished)
	se.Attempts = []Attempt{}
	return se, p.err
}

func sessionRow(runID, sessionID string) string {
	return "run " + runID + ", session " + sessionID
}

// sessionRowCols are the columns scanSessionRow reads, in its order.
const sessionRowCols = `run_id, session_id, seq, spec, status, attempts, failed_attempts, failure_kind`

func scanSessionRow(sc rowScanner) (SessionRow, error) {
	var r SessionRow
	var runID, spec string
	if err := sc.Scan(&runID, &r.ID, &r.Seq, &spec, &r.Status, &r.Attempts, &r.FailedAttempts, &r.FailureKind); err != nil {
		return r, err
	}
	p := parser{table: "sessions", row: sessionRow(runID, r.ID)}
	r.Spec = p.json("spec", spec)
	return r, p.err
}

// sessionAttempt is an attempt with the session it belongs to.
type sessionAttempt struct {
	session string
	Attempt
}

// attemptCols are the columns scanAttempt reads, in its order.
const attemptCols = `run_id, session_id, incarnation, call, attempt, phase, started, duration_ms, outcome, error_kind, error_message,
	http_status, request_sha256, response_sha256, input_tokens, output_tokens, model_id, fingerprint, request_id, finish_reason`

func scanAttempt(sc rowScanner) (sessionAttempt, error) {
	var a sessionAttempt
	var runID, started string
	if err := sc.Scan(&runID, &a.session, &a.Incarnation, &a.Call, &a.Attempt.Attempt, &a.Phase, &started, &a.DurationMS, &a.Outcome,
		&a.ErrorKind, &a.ErrorMsg, &a.HTTPStatus, &a.RequestSHA, &a.ResponseSHA, &a.InputTokens, &a.OutputTokens,
		&a.ModelID, &a.Fingerprint, &a.RequestID, &a.FinishReason); err != nil {
		return a, err
	}
	p := parser{table: "attempts", row: fmt.Sprintf("%s, attempt %d/%d/%d", sessionRow(runID, a.session), a.Incarnation, a.Call, a.Attempt.Attempt)}
	a.Started = p.time("started", started)
	return a, p.err
}

// sessionMessage is a transcript entry with the session it belongs to.
type sessionMessage struct {
	session string
	chat.Entry
}

// messageCols are the columns scanMessage reads, in its order.
const messageCols = `run_id, session_id, seq, phase, role, content, tool_calls, tool_call_id, name, refusal`

func scanMessage(sc rowScanner) (sessionMessage, error) {
	var m sessionMessage
	var runID, role, calls string
	var seq int
	if err := sc.Scan(&runID, &m.session, &seq, &m.Phase, &role, &m.Content, &calls, &m.ToolCallID, &m.Name, &m.Refusal); err != nil {
		return m, err
	}
	m.Role = chat.Role(role)
	if calls != "" {
		if err := json.Unmarshal([]byte(calls), &m.ToolCalls); err != nil {
			p := parser{table: "messages", row: fmt.Sprintf("%s, message %d", sessionRow(runID, m.session), seq)}
			p.fail("tool_calls", err)
			return m, p.err
		}
	}
	return m, nil
}

// artifactCols are the columns scanArtifact reads, in its order.
const artifactCols = `run_id, sha256, pack, pack_offset, length, encoding`

func scanArtifact(sc rowScanner) (packEntry, error) {
	var e packEntry
	var runID string
	if err := sc.Scan(&runID, &e.sha, &e.pack, &e.offset, &e.length, &e.encoding); err != nil {
		return e, err
	}
	p := parser{table: "artifacts", row: "run " + runID + ", artifact " + e.sha}
	if e.pack != inDatabase && (e.pack != filepath.Base(e.pack) || e.pack == "." || e.pack == "..") {
		p.fail("pack", fmt.Errorf("bad pack name %q", e.pack))
	}
	if e.offset < 0 || e.length < 0 {
		p.fail("length", fmt.Errorf("bad extent %d+%d", e.offset, e.length))
	}
	return e, p.err
}

// freezeCols are the columns scanFreeze reads, in its order.
const freezeCols = `hash, name, kind, source, frozen_at`

func scanFreeze(sc rowScanner) (Freeze, error) {
	var f Freeze
	var at string
	if err := sc.Scan(&f.Hash, &f.Name, &f.Kind, &f.Source, &at); err != nil {
		return f, err
	}
	p := parser{table: "deck_freezes", row: "deck " + f.Hash}
	f.FrozenAt = p.time("frozen_at", at)
	return f, p.err
}

// reviewCols are the columns scanReview reads, in its order.
const reviewCols = `run_id, reviewer_a, reviewer_b, seed, success_sample, frozen`

// scanReview reads a review without its items.
func scanReview(sc rowScanner) (*Review, error) {
	r := &Review{}
	var seed, frozen string
	if err := sc.Scan(&r.RunID, &r.Reviewers[0], &r.Reviewers[1], &seed, &r.Successes, &frozen); err != nil {
		return r, err
	}
	p := parser{table: "reviews", row: "review of run " + r.RunID}
	r.Seed = p.uint("seed", seed)
	r.Frozen = p.time("frozen", frozen)
	return r, p.err
}

// reviewItemCols are the columns scanReviewItem reads, in its order.
const reviewItemCols = `session_id, why, failure_type`

func scanReviewItem(sc rowScanner) (ReviewItem, error) {
	var it ReviewItem
	err := sc.Scan(&it.SessionID, &it.Why, &it.FailureType)
	return it, err
}

// reviewCodeCols are the columns scanReviewCode reads, in its order;
// adjudicationCols read an adjudication as a code without a reviewer.
const (
	reviewCodeCols   = `run_id, session_id, reviewer, code, note, updated`
	adjudicationCols = `run_id, session_id, '' AS reviewer, code, note, updated`
)

func scanReviewCode(sc rowScanner) (ReviewCode, error) {
	var c ReviewCode
	var runID, updated string
	if err := sc.Scan(&runID, &c.SessionID, &c.Reviewer, &c.Code, &c.Note, &updated); err != nil {
		return c, err
	}
	p := parser{table: "review_codes", row: sessionRow(runID, c.SessionID)}
	if c.Reviewer == "" {
		p.table = "review_adjudications"
	} else {
		p.row += ", reviewer " + c.Reviewer
	}
	c.Updated = p.time("updated", updated)
	return c, p.err
}

// reviewFinishedCols are the columns scanReviewFinished reads, in its order.
const reviewFinishedCols = `run_id, reviewer, finished`

func scanReviewFinished(sc rowScanner) (pair[time.Time], error) {
	var runID, at string
	var f pair[time.Time]
	if err := sc.Scan(&runID, &f.key, &at); err != nil {
		return f, err
	}
	p := parser{table: "review_finished", row: "review of run " + runID + ", reviewer " + f.key}
	f.val = p.time("finished", at)
	return f, p.err
}
