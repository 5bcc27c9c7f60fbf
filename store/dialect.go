package store

import (
	"context"
	"database/sql"
	_ "embed"
	"strconv"
	"strings"
)

// The store's SQL is written once for both databases where they read it
// alike (parameters as $1, $2, ..., which PostgreSQL reads and the SQLite
// driver binds to the n-th argument as well; ON CONFLICT upserts; LIKE ...
// ESCAPE; RETURNING). Where they differ, the dialect says so explicitly:
// each has its own schema file (schema_sqlite.sql, schema_postgres.sql),
// and a method for each spelling that differs (a JSON field, a byte
// substring, row locks). Nothing rewrites a query on its way to the
// database.

// dialect is the SQL spelling of one database.
type dialect struct {
	name     string            // "sqlite" or "postgres"
	sections map[string]string // its schema file, by section
}

//go:embed schema_sqlite.sql
var sqliteSchema string

//go:embed schema_postgres.sql
var postgresSchemaFile string

var (
	sqliteDialect   = dialect{name: "sqlite", sections: schemaSections(sqliteSchema)}
	postgresDialect = dialect{name: "postgres", sections: schemaSections(postgresSchemaFile)}
)

func (d dialect) postgres() bool { return d.name == "postgres" }

// schemaSections splits a schema file at its "-- section: NAME" lines.
func schemaSections(file string) map[string]string {
	out := map[string]string{}
	name := ""
	for _, line := range strings.SplitAfter(file, "\n") {
		if n, ok := strings.CutPrefix(line, "-- section: "); ok {
			name = strings.TrimSpace(n)
			out[name] = ""
			continue
		}
		if name != "" {
			out[name] += line
		}
	}
	return out
}

// ddl is a section of the dialect's schema file; a section that is not
// there is a mistake of budge's, found by its tests.
func (d dialect) ddl(section string) string {
	q, ok := d.sections[section]
	if !ok {
		panic("store: no section " + section + " in the " + d.name + " schema")
	}
	return q
}

// statements are the statements of a section, each run on its own.
func (d dialect) statements(section string) []string {
	var out []string
	for _, st := range strings.Split(d.ddl(section), ";\n") {
		if st = strings.TrimSpace(stripComments(st)); st != "" {
			out = append(out, st)
		}
	}
	return out
}

// stripComments drops the lines of a schema that are only a comment.
func stripComments(q string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(q, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// execDDL runs the statements of a section of the dialect's schema.
func execDDL(ctx context.Context, q execQuerier, d dialect, section string) error {
	for _, st := range d.statements(section) {
		if _, err := q.ExecContext(ctx, st); err != nil {
			return err
		}
	}
	return nil
}

// jsonField is the text of field key of the JSON object in column col.
func (d dialect) jsonField(col, key string) string {
	if d.postgres() {
		return "(" + col + "::jsonb ->> '" + key + "')"
	}
	return "json_extract(" + col + ", '$." + key + "')"
}

// binaryText are the columns that hold text from outside budge (a model's
// words, a provider's error), as table.column. PostgreSQL's TEXT refuses a
// NUL character, which a model may well produce (JSON's \u0000) and SQLite
// keeps; on PostgreSQL these columns are BYTEA (schema_postgres.sql),
// written as bytes and read back as the same string.
var binaryText = map[string]bool{
	"messages.content": true, "messages.refusal": true, "messages.name": true, "messages.tool_call_id": true,
	"attempts.error_message": true, "sessions.failure_message": true, "sessions.stop_reason": true,
}

// text is the argument for a binaryText column or a value compared with
// one: bytes on PostgreSQL, the string on SQLite.
func (d dialect) text(s string) any {
	if d.postgres() {
		return []byte(s)
	}
	return s
}

// contains is the condition that binaryText column col holds the bytes of
// parameter p (d.text) somewhere.
func (d dialect) contains(col, p string) string {
	if d.postgres() {
		return "position(CAST(" + p + " AS BYTEA) IN " + col + ") > 0"
	}
	return "instr(" + col + ", " + p + ") > 0"
}

// skipLocked ends a SELECT that picks rows for one writer among many: on
// PostgreSQL it locks them and passes over rows another writer has
// locked; SQLite has one writer at a time and no row locks.
func (d dialect) skipLocked() string {
	if d.postgres() {
		return " FOR UPDATE SKIP LOCKED"
	}
	return ""
}

// bindText turns the arguments of binaryText columns of a bulk insert
// into what the dialect stores them as (d.text).
func (d dialect) bindText(b *bulk) {
	n := len(b.cols)
	for c, col := range b.cols {
		if !binaryText[b.table+"."+col] {
			continue
		}
		for i := c; i < len(b.args); i += n {
			if s, ok := b.args[i].(string); ok {
				b.args[i] = d.text(s)
			}
		}
	}
}

// placeholders is n parameters numbered from first: "$3, $4, $5".
func placeholders(first, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(first+i))
	}
	return b.String()
}

// bulkPlaceholders is placeholders for the rows of a multi-row insert: on
// SQLite plain ?s, which its parser numbers as it reads them, where $n
// would have it look each number up among those read so far (preparing a
// 64-row insert of attempts took 3.5 ms instead of 0.15 ms, and binding
// parsed every number again).
func (d dialect) bulkPlaceholders(first, n int) string {
	if d.postgres() {
		return placeholders(first, n)
	}
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// params collects the arguments of a query built from parts.
type params []any

// add appends an argument and returns its placeholder.
func (p *params) add(v any) string {
	*p = append(*p, v)
	return "$" + strconv.Itoa(len(*p))
}

// database is the store's database: SQLite with the path of its file, so
// that an error saying the file is damaged names it, or PostgreSQL.
type database struct {
	*sql.DB
	path string // the SQLite file; "" for PostgreSQL
	d    dialect
}

// dbPath is implemented by queriers that know their file.
func (db *database) dbPath() string { return db.path }

// Conn reserves a connection of the database.
func (db *database) Conn(ctx context.Context) (*conn, error) {
	c, err := db.DB.Conn(ctx)
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c, d: db.d, path: db.path}, nil
}

// txn is a transaction of the store's database.
type txn = sql.Tx

// conn is a reserved connection of the store's database, with its dialect.
type conn struct {
	*sql.Conn
	d    dialect
	path string
}

func (c *conn) dbPath() string { return c.path }

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
