package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
)

// clusterBatch is how many sessions' attempts and messages one
// transaction of clusterAttempts copies: a few megabytes of rows, so that
// a transaction's pages fit SQLite's page cache and its write-ahead log
// stays small, and a stopped migration loses little work.
var clusterBatch = 2000

// clusterAttempts brings a version 7 database to version 8 (a batched
// migration, see batched): it copies the attempts and messages into tables
// keyed by the schedule position of their session (schema section
// "clustered"), a batch of sessions at a time in the order of (run,
// schedule position, session id), each batch in its own transaction that
// also records the last session copied (migration_progress). Started
// again after a stop, it goes on after that session. Its memory does not
// grow with the store: each batch is one INSERT ... SELECT. The attempts
// and messages of sessions that have no sessions row (interrupted
// sessions, whose attempts are kept) are copied last, at the schedule
// position of their cell, or -1 for a run that has no cells (made before
// runs had them; the session's next incarnation moves them to its
// position, see writeSessions). The last transaction puts the new tables
// in place of the old ones and records version 8.
var clusterAttempts = batchedMigration{"attempts and messages by schedule position", clusterStep}

// sessionKey is a session's place in the order clusterAttempts copies in.
type sessionKey struct {
	run string
	pos int64
	id  string
}

// clusterStep copies one batch (batchedMigration.batch has begun the
// transaction); last when it was the last, which also swaps the tables.
func clusterStep(ctx context.Context, c *conn) (last bool, err error) {
	if err := execDDL(ctx, c, c.d, "clustered"); err != nil {
		return false, fmt.Errorf("creating the new tables: %w", err)
	}
	from := sessionKey{"", math.MinInt64, ""}
	var copied int64
	err = c.QueryRowContext(ctx, `SELECT run_id, schedule_pos, session_id, sessions FROM migration_progress WHERE step = 'clustered'`).
		Scan(&from.run, &from.pos, &from.id, &copied)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, err
	}
	var to sessionKey
	err = c.QueryRowContext(ctx, `SELECT run_id, schedule_pos, session_id FROM sessions
		WHERE (run_id, schedule_pos, session_id) > ($1, $2, $3) ORDER BY run_id, schedule_pos, session_id LIMIT 1 OFFSET $4`,
		from.run, from.pos, from.id, clusterBatch-1).Scan(&to.run, &to.pos, &to.id)
	last = errors.Is(err, sql.ErrNoRows)
	if err != nil && !last {
		return false, err
	}
	inBatch := `(s.run_id, s.schedule_pos, s.session_id) > ($1, $2, $3)`
	args := []any{from.run, from.pos, from.id}
	if !last {
		inBatch += ` AND (s.run_id, s.schedule_pos, s.session_id) <= ($4, $5, $6)`
		args = append(args, to.run, to.pos, to.id)
	}
	for _, t := range clusteredTables {
		if _, err := c.ExecContext(ctx, `INSERT INTO `+t.name+`_clustered (run_id, schedule_pos, session_id, `+t.cols+`)
			SELECT s.run_id, s.schedule_pos, s.session_id, `+prefixed("x.", t.cols)+`
			FROM sessions s JOIN `+t.name+` x ON x.run_id = s.run_id AND x.session_id = s.session_id
			WHERE `+inBatch+` ORDER BY s.run_id, s.schedule_pos, s.session_id, `+prefixed("x.", t.key), args...); err != nil {
			return false, fmt.Errorf("copying %s: %w", t.name, err)
		}
	}
	if !last {
		_, err := c.ExecContext(ctx, `INSERT INTO migration_progress (step, run_id, schedule_pos, session_id, sessions)
			VALUES ('clustered', $1, $2, $3, $4) ON CONFLICT (step) DO UPDATE SET
			run_id = excluded.run_id, schedule_pos = excluded.schedule_pos, session_id = excluded.session_id, sessions = excluded.sessions`,
			to.run, to.pos, to.id, copied+int64(clusterBatch))
		if err != nil {
			return false, fmt.Errorf("recording progress: %w", err)
		}
	} else {
		for _, t := range clusteredTables {
			// The rows of sessions without a sessions row, found along
			// the old table's index by session (one pass over it).
			if _, err := c.ExecContext(ctx, `INSERT INTO `+t.name+`_clustered (run_id, schedule_pos, session_id, `+t.cols+`)
				SELECT x.run_id, COALESCE((SELECT c.pos FROM cells c WHERE c.run_id = x.run_id AND c.session_id = x.session_id), -1),
				x.session_id, `+prefixed("x.", t.cols)+`
				FROM (SELECT DISTINCT run_id, session_id FROM `+t.name+` o WHERE NOT EXISTS
					(SELECT 1 FROM sessions s WHERE s.run_id = o.run_id AND s.session_id = o.session_id)) orphan
				JOIN `+t.name+` x ON x.run_id = orphan.run_id AND x.session_id = orphan.session_id`); err != nil {
				return false, fmt.Errorf("copying the %s of sessions not stored: %w", t.name, err)
			}
		}
		if err := execDDL(ctx, c, c.d, "clustered_swap"); err != nil {
			return false, fmt.Errorf("replacing the old tables: %w", err)
		}
	}
	return last, nil
}

// clusteredTables are the tables clusterAttempts copies: their columns
// after run_id and session_id, and the columns that order a session's rows.
var clusteredTables = []struct{ name, cols, key string }{
	{"attempts", strings.TrimPrefix(attemptCols, "run_id, session_id, "), "incarnation, call, attempt"},
	{"messages", strings.TrimPrefix(messageCols, "run_id, session_id, "), "seq"},
}
