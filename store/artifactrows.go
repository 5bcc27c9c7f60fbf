package store

import (
	"context"
	"fmt"
)

// artifactBatch is how many rows of the artifact index one transaction of
// clusterArtifacts copies: a few megabytes, as clusterBatch.
var artifactBatch = 20000

// clusterArtifacts brings a version 8 database to version 9 (a batched
// migration, see batched). On SQLite it copies the artifact index into a
// table by row id without a key on (run, sha256) (schema section
// "artifact_rows"), in the order of its row ids, which is the order runs
// stored their artifacts, a batch at a time, each in its own transaction:
// the new table's last row id is how far it got, so a stopped migration
// goes on after it. The last transaction puts the new table in the place
// of the old one and indexes it (by pack position, by the first digits of
// the sha256). PostgreSQL keeps its index as it is (a table there is in
// the order its rows were inserted, and its unique index by (run, sha256)
// is the one its inserts' ON CONFLICT names): only the version is
// recorded.
var clusterArtifacts = batchedMigration{"the artifact index in storage order", artifactStep}

// artifactStep copies one batch (batchedMigration.batch has begun the
// transaction); last when it was the last, which also swaps the tables.
func artifactStep(ctx context.Context, c *conn) (last bool, err error) {
	last = true
	if !c.d.postgres() {
		if err := execDDL(ctx, c, c.d, "artifact_rows"); err != nil {
			return false, fmt.Errorf("creating the new table: %w", err)
		}
		res, err := c.ExecContext(ctx, `INSERT INTO artifacts_rows (rowid, `+artifactCols+`)
			SELECT rowid, `+artifactCols+` FROM artifacts
			WHERE rowid > (SELECT COALESCE(MAX(rowid), 0) FROM artifacts_rows) ORDER BY rowid LIMIT $1`, artifactBatch)
		if err != nil {
			return false, fmt.Errorf("copying artifacts: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return false, err
		}
		last = n < int64(artifactBatch)
	}
	if last {
		if err := execDDL(ctx, c, c.d, "artifact_rows_swap"); err != nil {
			return false, fmt.Errorf("replacing the old table: %w", err)
		}
	}
	return last, nil
}

// shaPrefix is how many leading hex digits of an artifact's sha256 the
// artifact index of a SQLite store holds (artifacts_by_gen, schema
// section "artifact_gen"; artifacts_by_sha in version 9): 48 bits, which
// tell millions of artifacts apart but for a rare few, whose rows the
// lookup then reads to compare the whole hash.
const shaPrefix = 12

// shaHead is what the index holds of an artifact's sha256 (SQL's
// substr(sha256, 1, 12)).
func shaHead(sha string) string { return sha[:min(len(sha), shaPrefix)] }
