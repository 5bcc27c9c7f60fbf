-- The tables of a SQLite store, in SQLite's spelling. Each section is what
-- one step of the schema (see migrations in schema.go) creates; the same
-- sections, in PostgreSQL's spelling, are in schema_postgres.sql. A
-- section may be empty where a database needs nothing for it.
--
-- Both files hold the same tables, columns and indexes: what changes is
-- the spelling (PostgreSQL's INTEGER is 32 bits and its REAL single
-- precision, so it has BIGINT and DOUBLE PRECISION; text from outside
-- budge, which may hold a NUL character that PostgreSQL's TEXT refuses, is
-- BYTEA there; JSON fields are read with json_extract here and ->> there).
-- A SQLite store keeps artifact bytes and run logs in files beside the
-- database ("shared" is empty here); its artifact index has an index by
-- pack position, which verifying a run reads artifacts in, and since
-- version 9 is a table by row id found by sha256 through an index of the
-- hash's first digits ("artifact_rows", empty in PostgreSQL's file: its
-- artifact table keeps the key by run and sha256), since version 10 an
-- index by run, generation of sessions and those digits ("artifact_gen",
-- likewise).

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
  sessions_planned INTEGER NOT NULL,
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
  seq INTEGER NOT NULL,
  schedule_pos INTEGER NOT NULL,
  spec TEXT NOT NULL,
  status TEXT NOT NULL,
  started TEXT NOT NULL,
  finished TEXT NOT NULL,
  stop_reason TEXT NOT NULL,
  failed_phase TEXT NOT NULL,
  failure_kind TEXT NOT NULL,
  failure_message TEXT NOT NULL,
  attempts INTEGER NOT NULL,
  failed_attempts INTEGER NOT NULL,
  input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  trace_sha256 TEXT NOT NULL,
  PRIMARY KEY (run_id, session_id)
);
CREATE TABLE IF NOT EXISTS attempts (
  run_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  incarnation INTEGER NOT NULL,
  call INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  phase TEXT NOT NULL,
  started TEXT NOT NULL,
  duration_ms REAL NOT NULL,
  outcome TEXT NOT NULL,
  error_kind TEXT NOT NULL,
  error_message TEXT NOT NULL,
  http_status INTEGER NOT NULL,
  request_sha256 TEXT NOT NULL,
  response_sha256 TEXT NOT NULL,
  input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
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
  pack_offset INTEGER NOT NULL,
  length INTEGER NOT NULL,
  encoding TEXT NOT NULL,
  PRIMARY KEY (run_id, sha256)
);
CREATE TABLE IF NOT EXISTS messages (
  run_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  phase TEXT NOT NULL,
  role TEXT NOT NULL,
  content TEXT NOT NULL,
  tool_calls TEXT NOT NULL,
  tool_call_id TEXT NOT NULL,
  name TEXT NOT NULL,
  refusal TEXT NOT NULL,
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
  success_sample INTEGER NOT NULL,
  frozen TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS review_items (
  run_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  pos INTEGER NOT NULL,
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

-- section: leases
-- version 2: the lease on a run, held by the one process that may run it.
CREATE TABLE IF NOT EXISTS run_leases (
  run_id TEXT PRIMARY KEY,
  token TEXT NOT NULL,
  holder TEXT NOT NULL,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
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
  seq INTEGER NOT NULL,
  pos INTEGER NOT NULL,
  state TEXT NOT NULL,
  token TEXT NOT NULL,
  holder TEXT NOT NULL,
  lease_until INTEGER NOT NULL,
  claims INTEGER NOT NULL,
  lost_holder TEXT NOT NULL,
  PRIMARY KEY (run_id, session_id)
);
CREATE TABLE IF NOT EXISTS run_workers (
  run_id TEXT NOT NULL,
  token TEXT NOT NULL,
  holder TEXT NOT NULL,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  joined TEXT NOT NULL,
  heartbeat INTEGER NOT NULL,
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
  limit_usd REAL NOT NULL,
  spent_usd REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS run_pace (
  run_id TEXT PRIMARY KEY,
  per_second INTEGER NOT NULL,
  window_ms INTEGER NOT NULL,
  used INTEGER NOT NULL,
  last_grant INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS cells_by_state ON cells (run_id, state, pos);

-- section: batches
-- version 6: the provider batches of a run (budge run --batch).
CREATE TABLE IF NOT EXISTS run_batches (
  run_id TEXT NOT NULL,
  token TEXT NOT NULL,
  wave INTEGER NOT NULL,
  state TEXT NOT NULL,
  record TEXT NOT NULL,
  PRIMARY KEY (run_id, token)
);

-- section: pack_index
-- version 7: a run's artifacts in the order its packs hold them.
CREATE INDEX IF NOT EXISTS artifacts_by_pack ON artifacts (run_id, pack, pack_offset);

-- section: browse_indexes
-- made by PrepareBrowse: the session table's filters, in storage order.
CREATE INDEX IF NOT EXISTS sessions_by_seq ON sessions (run_id, seq);
CREATE INDEX IF NOT EXISTS sessions_by_branch ON sessions (run_id, json_extract(spec, '$.branch'), seq);
CREATE INDEX IF NOT EXISTS sessions_by_case ON sessions (run_id, json_extract(spec, '$.case_id'), seq);
CREATE INDEX IF NOT EXISTS sessions_by_status ON sessions (run_id, status, seq);
CREATE INDEX IF NOT EXISTS sessions_by_item ON sessions (run_id, json_extract(spec, '$.item'), seq);

-- section: view
-- made by PrepareBrowse: the viewer's index of a run, and an index for
-- each filter and sort of its session table.
CREATE TABLE IF NOT EXISTS view_runs (
  run_id TEXT PRIMARY KEY,
  basis TEXT NOT NULL,
  sessions INTEGER NOT NULL,
  headline TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS view_sessions (
  run_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL,
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
  contradiction INTEGER NOT NULL,
  failure INTEGER NOT NULL,
  transport INTEGER NOT NULL,
  parse_failure INTEGER NOT NULL,
  discordant INTEGER NOT NULL,
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
-- version 8: a run's attempts and messages in the order the run stores
-- them, by the schedule position of their session (the order sessions are
-- started in), with the session's id after it: a run appends its rows at
-- the end of these tables instead of inserting them at random places in
-- indexes by session id, which a large run's page cache cannot hold. A
-- session's rows are found by its schedule position, which its sessions
-- row (or, for the attempts of a session not stored, its cell) holds.
-- Messages, whose rows are often larger than a quarter of a page, stay in
-- a table by row id (which a run appends to) with the key as its index:
-- as a table by key, their text would spill into overflow pages and the
-- table grow by half.
-- The migration copies the version 7 tables into these a batch of
-- sessions at a time, recording how far it got in migration_progress, so
-- that a migration that is stopped goes on where it was when it is
-- started again; then clustered_swap puts these in their place.
CREATE TABLE IF NOT EXISTS attempts_clustered (
  run_id TEXT NOT NULL,
  schedule_pos INTEGER NOT NULL,
  session_id TEXT NOT NULL,
  incarnation INTEGER NOT NULL,
  call INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  phase TEXT NOT NULL,
  started TEXT NOT NULL,
  duration_ms REAL NOT NULL,
  outcome TEXT NOT NULL,
  error_kind TEXT NOT NULL,
  error_message TEXT NOT NULL,
  http_status INTEGER NOT NULL,
  request_sha256 TEXT NOT NULL,
  response_sha256 TEXT NOT NULL,
  input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  model_id TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  request_id TEXT NOT NULL,
  finish_reason TEXT NOT NULL,
  PRIMARY KEY (run_id, schedule_pos, session_id, incarnation, call, attempt)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS messages_clustered (
  run_id TEXT NOT NULL,
  schedule_pos INTEGER NOT NULL,
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  phase TEXT NOT NULL,
  role TEXT NOT NULL,
  content TEXT NOT NULL,
  tool_calls TEXT NOT NULL,
  tool_call_id TEXT NOT NULL,
  name TEXT NOT NULL,
  refusal TEXT NOT NULL,
  PRIMARY KEY (run_id, schedule_pos, session_id, seq)
);
CREATE TABLE IF NOT EXISTS migration_progress (
  step TEXT PRIMARY KEY,
  run_id TEXT NOT NULL,
  schedule_pos INTEGER NOT NULL,
  session_id TEXT NOT NULL,
  sessions INTEGER NOT NULL
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
-- version 9: a run's artifact index in the order the run stores its
-- artifacts: a table by row id, which a run appends to, with no key on
-- (run, sha256). That key's index put each new artifact at a random place
-- (a sha256 is random), and at about four new artifacts a session its
-- pages, 100 bytes an entry, were the largest part of what a large run
-- wrote at random places and read back through the page cache. An
-- artifact is found by sha256 through artifacts_by_sha, an index of the
-- hash's first 12 hex digits only (shaPrefix in artifactrows.go; a
-- lookup compares the run and the whole hash on the row), about a fifth
-- of the size. A run stores each artifact once: it looks the hash up
-- before it inserts, in the transaction that inserts it.
-- The migration copies the version 8 table into this one a batch of rows
-- at a time, in row id order (how far it got is this table's last row
-- id), then artifact_rows_swap puts it in its place and indexes it.
CREATE TABLE IF NOT EXISTS artifacts_rows (
  run_id TEXT NOT NULL,
  sha256 TEXT NOT NULL,
  pack TEXT NOT NULL,
  pack_offset INTEGER NOT NULL,
  length INTEGER NOT NULL,
  encoding TEXT NOT NULL
);

-- section: artifact_rows_swap
-- version 9, once every row is copied: the new table takes the place of
-- the old one (whose index by pack position goes with it).
DROP TABLE artifacts;
ALTER TABLE artifacts_rows RENAME TO artifacts;
CREATE INDEX IF NOT EXISTS artifacts_by_pack ON artifacts (run_id, pack, pack_offset);
CREATE INDEX IF NOT EXISTS artifacts_by_sha ON artifacts (substr(sha256, 1, 12));

-- section: artifact_gen
-- version 10: a run's artifact index by generation. An artifact row
-- carries the generation of the session that stored it (its schedule
-- position divided by artifactGen, in artifacts.go; -1 for the rows of
-- stores before this version), and artifacts_by_gen indexes the rows by
-- run, generation and the hash's first digits. A run looks up and inserts
-- its new artifacts in the generation it is storing, a part of the index
-- of a few thousand sessions that stays in the page cache, where
-- artifacts_by_sha put each new artifact at a random place of an index as
-- large as the run: at 208,000 sessions that index was most of what the
-- run wrote and read back, and what made a run's time grow faster than
-- its sessions. So a run stores an artifact once in each generation that
-- has it (a session's own artifacts are always in its generation); an
-- artifact is found by hash in any generation of its run. The column is
-- added first (section artifact_gen_column), unless the table has it.
CREATE INDEX IF NOT EXISTS artifacts_by_gen ON artifacts (run_id, gen, substr(sha256, 1, 12));
DROP INDEX IF EXISTS artifacts_by_sha;

-- section: artifact_gen_column
-- version 10: the generation of each artifact row, before artifact_gen.
ALTER TABLE artifacts ADD COLUMN gen INTEGER NOT NULL DEFAULT -1;
