-- The tables of a PostgreSQL store, in PostgreSQL's spelling: the sections
-- of schema_sqlite.sql (see there), with BIGINT for INTEGER, DOUBLE
-- PRECISION for REAL, BYTEA for text from outside budge (messages' content,
-- refusal, name and tool_call_id, attempts' error_message, sessions'
-- failure_message and stop_reason, which may hold a NUL character), and
-- JSON fields read with ->>. Every machine reads the same database and no
-- files, so artifact bytes (content-addressed, shared by runs) and run logs
-- are tables ("shared"); artifacts are not in packs ("pack_index" is
-- empty) and keep their key by run and sha256 ("artifact_rows" and
-- "artifact_gen" are empty). Changing a table here changes it for databases that exist:
-- every change is a new section and a migration.

-- section: tables
-- version 1: runs with their deck snapshots, sessions, attempts, messages
-- and the artifact index; deck freezes; the explanation review of a run (a
-- frozen sample, two reviewers' codes, each reviewer's "finished" mark and
-- the adjudication of disagreements).
CREATE TABLE IF NOT EXISTS runs (
  id TEXT PRIMARY KEY,
  protocol TEXT NOT NULL,
  created TEXT NOT NULL,
  finished TEXT,
  status TEXT NOT NULL,
  deck_name TEXT NOT NULL,
  deck_hash TEXT NOT NULL,
  model TEXT NOT NULL,
  seed TEXT NOT NULL,
  sessions_planned BIGINT NOT NULL,
  manifest TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS decks (
  hash TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  source TEXT NOT NULL,
  content TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
  run_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  seq BIGINT NOT NULL,
  schedule_pos BIGINT NOT NULL,
  spec TEXT NOT NULL,
  status TEXT NOT NULL,
  started TEXT NOT NULL,
  finished TEXT NOT NULL,
  stop_reason BYTEA NOT NULL,
  failed_phase TEXT NOT NULL,
  failure_kind TEXT NOT NULL,
  failure_message BYTEA NOT NULL,
  attempts BIGINT NOT NULL,
  failed_attempts BIGINT NOT NULL,
  input_tokens BIGINT NOT NULL,
  output_tokens BIGINT NOT NULL,
  trace_sha256 TEXT NOT NULL,
  PRIMARY KEY (run_id, session_id)
);
CREATE TABLE IF NOT EXISTS attempts (
  run_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  incarnation BIGINT NOT NULL,
  call BIGINT NOT NULL,
  attempt BIGINT NOT NULL,
  phase TEXT NOT NULL,
  started TEXT NOT NULL,
  duration_ms DOUBLE PRECISION NOT NULL,
  outcome TEXT NOT NULL,
  error_kind TEXT NOT NULL,
  error_message BYTEA NOT NULL,
  http_status BIGINT NOT NULL,
  request_sha256 TEXT NOT NULL,
  response_sha256 TEXT NOT NULL,
  input_tokens BIGINT NOT NULL,
  output_tokens BIGINT NOT NULL,
  model_id TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  request_id TEXT NOT NULL,
  finish_reason TEXT NOT NULL,
  PRIMARY KEY (run_id, session_id, incarnation, call, attempt)
);
CREATE TABLE IF NOT EXISTS artifacts (
  run_id TEXT NOT NULL,
  sha256 TEXT NOT NULL,
  pack TEXT NOT NULL,
  pack_offset BIGINT NOT NULL,
  length BIGINT NOT NULL,
  encoding TEXT NOT NULL,
  PRIMARY KEY (run_id, sha256)
);
CREATE TABLE IF NOT EXISTS messages (
  run_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  seq BIGINT NOT NULL,
  phase TEXT NOT NULL,
  role TEXT NOT NULL,
  content BYTEA NOT NULL,
  tool_calls TEXT NOT NULL,
  tool_call_id BYTEA NOT NULL,
  name BYTEA NOT NULL,
  refusal BYTEA NOT NULL,
  PRIMARY KEY (run_id, session_id, seq)
);

CREATE TABLE IF NOT EXISTS deck_freezes (
  hash TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  kind TEXT NOT NULL,
  source TEXT NOT NULL,
  frozen_at TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS reviews (
  run_id TEXT PRIMARY KEY,
  reviewer_a TEXT NOT NULL,
  reviewer_b TEXT NOT NULL,
  seed TEXT NOT NULL,
  success_sample BIGINT NOT NULL,
  frozen TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS review_items (
  run_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  pos BIGINT NOT NULL,
  why TEXT NOT NULL,
  failure_type TEXT NOT NULL,
  PRIMARY KEY (run_id, session_id)
);
CREATE TABLE IF NOT EXISTS review_codes (
  run_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  reviewer TEXT NOT NULL,
  code TEXT NOT NULL,
  note TEXT NOT NULL,
  updated TEXT NOT NULL,
  PRIMARY KEY (run_id, session_id, reviewer)
);
CREATE TABLE IF NOT EXISTS review_finished (
  run_id TEXT NOT NULL,
  reviewer TEXT NOT NULL,
  finished TEXT NOT NULL,
  PRIMARY KEY (run_id, reviewer)
);
CREATE TABLE IF NOT EXISTS review_adjudications (
  run_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  code TEXT NOT NULL,
  note TEXT NOT NULL,
  updated TEXT NOT NULL,
  PRIMARY KEY (run_id, session_id)
);

-- section: shared
-- version 1, on a database every machine shares: artifact bytes and run logs.
CREATE TABLE IF NOT EXISTS artifact_blobs (
  sha256 TEXT PRIMARY KEY,
  encoding TEXT NOT NULL,
  data BYTEA NOT NULL
);
CREATE TABLE IF NOT EXISTS run_logs (
  run_id TEXT NOT NULL,
  chunk BIGINT NOT NULL,
  lines TEXT NOT NULL,
  PRIMARY KEY (run_id, chunk)
);

-- section: leases
-- version 2: the lease on a run, held by the one process that may run it.
CREATE TABLE IF NOT EXISTS run_leases (
  run_id TEXT PRIMARY KEY,
  token TEXT NOT NULL,
  holder TEXT NOT NULL,
  host TEXT NOT NULL,
  pid BIGINT NOT NULL,
  acquired TEXT NOT NULL,
  heartbeat TEXT NOT NULL
);

-- section: review_tokens
-- version 3: each reviewer's access token, stored only as its sha256.
CREATE TABLE IF NOT EXISTS review_tokens (
  run_id TEXT NOT NULL,
  reviewer TEXT NOT NULL,
  token_sha256 TEXT NOT NULL,
  issued TEXT NOT NULL,
  PRIMARY KEY (run_id, reviewer)
);

-- section: seq_index
-- version 4: sessions by plan position, which scoring reads a batch at a time.
CREATE INDEX IF NOT EXISTS sessions_by_seq ON sessions (run_id, seq);

-- section: cells
-- version 5: the cells of runs advanced by workers, the workers of each run
-- with their heartbeats, the one worker that scores a run once every cell
-- is done, the shared cost ledger and the shared pace (calls per second).
CREATE TABLE IF NOT EXISTS cells (
  run_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  seq BIGINT NOT NULL,
  pos BIGINT NOT NULL,
  state TEXT NOT NULL,
  token TEXT NOT NULL,
  holder TEXT NOT NULL,
  lease_until BIGINT NOT NULL,
  claims BIGINT NOT NULL,
  lost_holder TEXT NOT NULL,
  PRIMARY KEY (run_id, session_id)
);
CREATE TABLE IF NOT EXISTS run_workers (
  run_id TEXT NOT NULL,
  token TEXT NOT NULL,
  holder TEXT NOT NULL,
  host TEXT NOT NULL,
  pid BIGINT NOT NULL,
  joined TEXT NOT NULL,
  heartbeat BIGINT NOT NULL,
  left_at TEXT NOT NULL,
  record TEXT NOT NULL,
  PRIMARY KEY (run_id, token)
);
CREATE TABLE IF NOT EXISTS run_finisher (
  run_id TEXT PRIMARY KEY,
  token TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS run_ledger (
  run_id TEXT PRIMARY KEY,
  limit_usd DOUBLE PRECISION NOT NULL,
  spent_usd DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS run_pace (
  run_id TEXT PRIMARY KEY,
  per_second BIGINT NOT NULL,
  window_ms BIGINT NOT NULL,
  used BIGINT NOT NULL,
  last_grant BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS cells_by_state ON cells (run_id, state, pos);

-- section: batches
-- version 6: the provider batches of a run (budge run --batch).
CREATE TABLE IF NOT EXISTS run_batches (
  run_id TEXT NOT NULL,
  token TEXT NOT NULL,
  wave BIGINT NOT NULL,
  state TEXT NOT NULL,
  record TEXT NOT NULL,
  PRIMARY KEY (run_id, token)
);

-- section: pack_index
-- version 7: a run's artifacts in the order its packs hold them.

-- section: browse_indexes
-- made by PrepareBrowse: the session table's filters, in storage order.
CREATE INDEX IF NOT EXISTS sessions_by_seq ON sessions (run_id, seq);
CREATE INDEX IF NOT EXISTS sessions_by_branch ON sessions (run_id, (spec::jsonb ->> 'branch'), seq);
CREATE INDEX IF NOT EXISTS sessions_by_case ON sessions (run_id, (spec::jsonb ->> 'case_id'), seq);
CREATE INDEX IF NOT EXISTS sessions_by_status ON sessions (run_id, status, seq);
CREATE INDEX IF NOT EXISTS sessions_by_item ON sessions (run_id, (spec::jsonb ->> 'item'), seq);

-- section: view
-- made by PrepareBrowse: the viewer's index of a run, and an index for
-- each filter and sort of its session table.
CREATE TABLE IF NOT EXISTS view_runs (
  run_id TEXT PRIMARY KEY,
  basis TEXT NOT NULL,
  sessions BIGINT NOT NULL,
  headline TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS view_sessions (
  run_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  seq BIGINT NOT NULL,
  status TEXT NOT NULL,
  attempts BIGINT NOT NULL,
  case_id TEXT NOT NULL,
  branch TEXT NOT NULL,
  assignment TEXT NOT NULL,
  profile_order TEXT NOT NULL,
  item TEXT NOT NULL,
  first_sel TEXT NOT NULL,
  first_status TEXT NOT NULL,
  final_sel TEXT NOT NULL,
  final_status TEXT NOT NULL,
  reversal TEXT NOT NULL,
  correction TEXT NOT NULL,
  update_observed TEXT NOT NULL,
  contradiction BIGINT NOT NULL,
  failure BIGINT NOT NULL,
  transport BIGINT NOT NULL,
  parse_failure BIGINT NOT NULL,
  discordant BIGINT NOT NULL,
  direction TEXT NOT NULL,
  pair TEXT NOT NULL,
  triggers TEXT NOT NULL,
  PRIMARY KEY (run_id, session_id)
);
CREATE INDEX IF NOT EXISTS view_sessions_seq ON view_sessions (run_id, seq);
CREATE INDEX IF NOT EXISTS view_sessions_failure ON view_sessions (run_id, failure, seq);
CREATE INDEX IF NOT EXISTS view_sessions_transport ON view_sessions (run_id, transport, seq);
CREATE INDEX IF NOT EXISTS view_sessions_parse_failure ON view_sessions (run_id, parse_failure, seq);
CREATE INDEX IF NOT EXISTS view_sessions_discordant ON view_sessions (run_id, discordant, seq);
CREATE INDEX IF NOT EXISTS view_sessions_reversal ON view_sessions (run_id, reversal, seq);
CREATE INDEX IF NOT EXISTS view_sessions_contradiction ON view_sessions (run_id, contradiction, seq);
CREATE INDEX IF NOT EXISTS view_sessions_first_status ON view_sessions (run_id, first_status, seq);
CREATE INDEX IF NOT EXISTS view_sessions_final_status ON view_sessions (run_id, final_status, seq);
CREATE INDEX IF NOT EXISTS view_sessions_correction ON view_sessions (run_id, correction, seq);
CREATE INDEX IF NOT EXISTS view_sessions_update_observed ON view_sessions (run_id, update_observed, seq);
CREATE INDEX IF NOT EXISTS view_sessions_direction ON view_sessions (run_id, direction, seq);
CREATE INDEX IF NOT EXISTS view_sessions_case_id ON view_sessions (run_id, case_id, seq);
CREATE INDEX IF NOT EXISTS view_sessions_branch ON view_sessions (run_id, branch, seq);
CREATE INDEX IF NOT EXISTS view_sessions_item ON view_sessions (run_id, item, seq);
CREATE INDEX IF NOT EXISTS view_sessions_first_sel ON view_sessions (run_id, first_sel, seq);
CREATE INDEX IF NOT EXISTS view_sessions_final_sel ON view_sessions (run_id, final_sel, seq);
CREATE INDEX IF NOT EXISTS view_sessions_status ON view_sessions (run_id, status, seq);
CREATE INDEX IF NOT EXISTS view_sessions_attempts ON view_sessions (run_id, attempts, seq);
CREATE INDEX IF NOT EXISTS view_sessions_assignment ON view_sessions (run_id, assignment, seq);
CREATE INDEX IF NOT EXISTS view_sessions_profile_order ON view_sessions (run_id, profile_order, seq);
CREATE INDEX IF NOT EXISTS view_sessions_pair ON view_sessions (run_id, pair, seq);

-- section: clustered
-- version 8: attempts and messages keyed by the schedule position of their
-- session before its id, as on SQLite (see there): the same queries find a
-- session's rows by its position. The migration copies the version 7
-- tables into these a batch of sessions at a time (schema.go).
CREATE TABLE IF NOT EXISTS attempts_clustered (
  run_id TEXT NOT NULL,
  schedule_pos BIGINT NOT NULL,
  session_id TEXT NOT NULL,
  incarnation BIGINT NOT NULL,
  call BIGINT NOT NULL,
  attempt BIGINT NOT NULL,
  phase TEXT NOT NULL,
  started TEXT NOT NULL,
  duration_ms DOUBLE PRECISION NOT NULL,
  outcome TEXT NOT NULL,
  error_kind TEXT NOT NULL,
  error_message BYTEA NOT NULL,
  http_status BIGINT NOT NULL,
  request_sha256 TEXT NOT NULL,
  response_sha256 TEXT NOT NULL,
  input_tokens BIGINT NOT NULL,
  output_tokens BIGINT NOT NULL,
  model_id TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  request_id TEXT NOT NULL,
  finish_reason TEXT NOT NULL,
  PRIMARY KEY (run_id, schedule_pos, session_id, incarnation, call, attempt)
);
CREATE TABLE IF NOT EXISTS messages_clustered (
  run_id TEXT NOT NULL,
  schedule_pos BIGINT NOT NULL,
  session_id TEXT NOT NULL,
  seq BIGINT NOT NULL,
  phase TEXT NOT NULL,
  role TEXT NOT NULL,
  content BYTEA NOT NULL,
  tool_calls TEXT NOT NULL,
  tool_call_id BYTEA NOT NULL,
  name BYTEA NOT NULL,
  refusal BYTEA NOT NULL,
  PRIMARY KEY (run_id, schedule_pos, session_id, seq)
);
CREATE TABLE IF NOT EXISTS migration_progress (
  step TEXT PRIMARY KEY,
  run_id TEXT NOT NULL,
  schedule_pos BIGINT NOT NULL,
  session_id TEXT NOT NULL,
  sessions BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_by_pos ON sessions (run_id, schedule_pos, session_id);

-- section: clustered_swap
-- version 8, once every row is copied: the clustered tables take the
-- place of the old ones.
DROP TABLE attempts;
DROP TABLE messages;
ALTER TABLE attempts_clustered RENAME TO attempts;
ALTER TABLE messages_clustered RENAME TO messages;
DROP INDEX sessions_by_pos;
DROP TABLE migration_progress;

-- section: artifact_rows
-- version 9: nothing here. A table is kept in the order its rows were
-- inserted, and the index by (run, sha256) is the unique key the
-- artifact inserts' ON CONFLICT names.

-- section: artifact_rows_swap

-- section: artifact_gen
-- version 10: nothing here. The artifact table keeps its unique key by
-- (run, sha256), which its inserts' ON CONFLICT names: a run stores each
-- artifact once.

-- section: artifact_gen_column
-- version 10: nothing here (see artifact_gen).
