package store

import (
	"context"
	"database/sql"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// The store's SQL is written once, in SQLite's spelling, and a dialect
// rewrites it for PostgreSQL as it reaches the database: placeholders
// (? becomes $1, $2, ...), JSON fields (json_extract(col, '$.key') becomes
// (col::jsonb ->> 'key')) and column types in the schema (INTEGER becomes
// BIGINT, REAL becomes DOUBLE PRECISION, BLOB becomes BYTEA). Everything
// else (ON CONFLICT upserts, LIKE ... ESCAPE, expression indexes) both
// databases read alike. What the dialects do differently beyond spelling
// (the schema version, a write transaction taken at its start, where
// artifacts and run logs live) asks dialect.postgres().

// dialect is the SQL spelling of one database.
type dialect struct {
	name string // "sqlite" or "postgres"
}

var (
	sqliteDialect   = dialect{name: "sqlite"}
	postgresDialect = dialect{name: "postgres"}
)

func (d dialect) postgres() bool { return d.name == "postgres" }

// rewritten caches PostgreSQL spellings by query: the store runs a bounded
// set of queries many times.
var rewritten sync.Map

var jsonExtract = regexp.MustCompile(`json_extract\((\w+), '\$\.(\w+)'\)`)

// rewrite spells a query for the dialect.
func (d dialect) rewrite(q string) string {
	if !d.postgres() {
		return q
	}
	if v, ok := rewritten.Load(q); ok {
		return v.(string)
	}
	out := numberPlaceholders(jsonExtract.ReplaceAllString(q, `($1::jsonb ->> '$2')`))
	rewritten.Store(q, out)
	return out
}

// numberPlaceholders turns each ? outside quotes into $1, $2, ...
func numberPlaceholders(q string) string {
	var b strings.Builder
	n := 0
	var quote byte
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '?':
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

var ddlTypes = strings.NewReplacer(" INTEGER ", " BIGINT ", " REAL ", " DOUBLE PRECISION ", " BLOB ", " BYTEA ")

// binaryText are the columns that hold text from outside budge (a model's
// words, a provider's error), as table.column. PostgreSQL's TEXT refuses a
// NUL character, which a model may well produce (JSON's \u0000) and SQLite
// keeps; on PostgreSQL these columns are BYTEA, written as bytes and read
// back as the same string.
var binaryText = map[string]bool{
	"messages.content": true, "messages.refusal": true, "messages.name": true, "messages.tool_call_id": true,
	"attempts.error_message": true, "sessions.failure_message": true, "sessions.stop_reason": true,
}

var createTable = regexp.MustCompile(`(?s)CREATE TABLE IF NOT EXISTS (\w+) \((.*?)\n\);`)

// ddl spells a schema for the dialect: PostgreSQL's INTEGER is 32 bits,
// its REAL single precision, and binaryText columns are BYTEA.
func (d dialect) ddl(schema string) string {
	if !d.postgres() {
		return schema
	}
	return createTable.ReplaceAllStringFunc(ddlTypes.Replace(schema), func(t string) string {
		table := createTable.FindStringSubmatch(t)[1]
		lines := strings.Split(t, "\n")
		for i, l := range lines {
			col, rest, ok := strings.Cut(strings.TrimSpace(l), " TEXT ")
			if ok && binaryText[table+"."+col] {
				lines[i] = "  " + col + " BYTEA " + rest
			}
		}
		return strings.Join(lines, "\n")
	})
}

// bindText turns the arguments of binaryText columns of a bulk insert into
// bytes on PostgreSQL, where those columns are BYTEA.
func (d dialect) bindText(b *bulk) {
	if !d.postgres() {
		return
	}
	n := len(b.cols)
	for c, col := range b.cols {
		if !binaryText[b.table+"."+col] {
			continue
		}
		for i := c; i < len(b.args); i += n {
			if s, ok := b.args[i].(string); ok {
				b.args[i] = []byte(s)
			}
		}
	}
}

// database is the store's database: SQLite with the path of its file, so
// that an error saying the file is damaged names it, or PostgreSQL. Every
// query passes through the dialect.
type database struct {
	*sql.DB
	path string // the SQLite file; "" for PostgreSQL
	d    dialect
}

// dbPath is implemented by queriers that know their file.
func (db *database) dbPath() string { return db.path }

func (db *database) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return db.DB.ExecContext(ctx, db.d.rewrite(q), args...)
}

func (db *database) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return db.DB.QueryContext(ctx, db.d.rewrite(q), args...)
}

func (db *database) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return db.DB.QueryRowContext(ctx, db.d.rewrite(q), args...)
}

func (db *database) PrepareContext(ctx context.Context, q string) (*sql.Stmt, error) {
	return db.DB.PrepareContext(ctx, db.d.rewrite(q))
}

// BeginTx begins a transaction whose queries pass through the dialect.
func (db *database) BeginTx(ctx context.Context, opts *sql.TxOptions) (*txn, error) {
	tx, err := db.DB.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &txn{Tx: tx, d: db.d}, nil
}

// Conn reserves a connection whose queries pass through the dialect.
func (db *database) Conn(ctx context.Context) (*conn, error) {
	c, err := db.DB.Conn(ctx)
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c, d: db.d}, nil
}

// txn is a transaction of the store's database.
type txn struct {
	*sql.Tx
	d dialect
}

func (t *txn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return t.Tx.ExecContext(ctx, t.d.rewrite(q), args...)
}

func (t *txn) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return t.Tx.QueryContext(ctx, t.d.rewrite(q), args...)
}

func (t *txn) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return t.Tx.QueryRowContext(ctx, t.d.rewrite(q), args...)
}

// conn is a reserved connection of the store's database.
type conn struct {
	*sql.Conn
	d dialect
}

func (c *conn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return c.Conn.ExecContext(ctx, c.d.rewrite(q), args...)
}

func (c *conn) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return c.Conn.QueryContext(ctx, c.d.rewrite(q), args...)
}

func (c *conn) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return c.Conn.QueryRowContext(ctx, c.d.rewrite(q), args...)
}

// writeLock is held by the one writer that checks and then changes shared
// rows (a migration, a lease): PostgreSQL takes it as a transaction-scoped
// advisory lock, SQLite's BEGIN IMMEDIATE already is one.
const writeLock = 0x6275646765 // "budge"

// beginWrite begins a transaction that holds the write lock from its
// start, so that what it reads is still so when it writes.
func (c *conn) beginWrite(ctx context.Context) error {
	if !c.d.postgres() {
		_, err := c.ExecContext(ctx, "BEGIN IMMEDIATE")
		return err
	}
	if _, err := c.ExecContext(ctx, "BEGIN"); err != nil {
		return err
	}
	if _, err := c.ExecContext(ctx, "SELECT pg_advisory_xact_lock("+strconv.Itoa(writeLock)+")"); err != nil {
		c.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return err
	}
	return nil
}
