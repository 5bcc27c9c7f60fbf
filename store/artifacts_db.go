package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

// inDatabase is the pack name of an artifact whose bytes are in the
// artifact_blobs table.
const inDatabase = ""

// blobTable keeps artifacts in the database's artifact_blobs table, each
// once by its sha256 whichever runs hold it: every machine that reaches a
// shared database reads them there.
type blobTable struct{ s *Store }

func (a blobTable) close() error { return nil }

// put stores the index entries and the blobs of the sessions' artifacts,
// each once.
func (a blobTable) put(ctx context.Context, tx *txn, runID string, sessions []Session) (func(), error) {
	idx := artifactBulk("ON CONFLICT (run_id, sha256) DO NOTHING")
	blobs := newBulk("artifact_blobs", "ON CONFLICT (sha256) DO NOTHING", "sha256", "encoding", "data")
	all := map[string]Blob{}
	for _, se := range sessions {
		maps.Copy(all, se.Artifacts)
	}
	// Rows go in in the order of their hashes: workers storing the same
	// artifacts at once then take the unique-index locks in one order, and
	// never wait on each other in a cycle (a deadlock PostgreSQL would
	// break by failing one of the writes).
	for _, sha := range slices.Sorted(maps.Keys(all)) {
		b := all[sha]
		idx.add(runID, sha, inDatabase, 0, len(b.Data), b.Encoding)
		blobs.add(sha, b.Encoding, b.Data)
	}
	for _, b := range []*bulk{blobs, idx} {
		if err := a.s.execBulk(ctx, tx, b); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// blobCols read an artifact stored in the database with its bytes.
const blobCols = `a.run_id, a.sha256, a.pack, a.pack_offset, a.length, a.encoding, b.encoding, b.data`

type blobEntry struct {
	packEntry
	runID string
	data  []byte
}

func scanBlob(sc rowScanner) (blobEntry, error) {
	var e blobEntry
	var enc string
	if err := sc.Scan(&e.runID, &e.sha, &e.pack, &e.offset, &e.length, &e.encoding, &enc, &e.data); err != nil {
		return e, err
	}
	e.encoding = enc
	p := parser{table: "artifacts", row: "run " + e.runID + ", artifact " + e.sha}
	if e.pack != inDatabase {
		p.fail("pack", fmt.Errorf("%q on a store that keeps artifacts in the database", e.pack))
	}
	return e, p.err
}

// checkBlob decodes an artifact's bytes from the database and verifies
// their hash.
func checkBlob(e blobEntry) ([]byte, error) {
	bad := func(err error) error {
		return &ArtifactError{RunID: e.runID, SHA: e.sha, Pack: inDatabase, Length: int64(len(e.data)), Err: err}
	}
	body, err := unpack(e.encoding, e.data)
	if err != nil {
		return nil, bad(fmt.Errorf("do not decode: %w", err))
	}
	if got := ArtifactID(body); got != e.sha {
		return nil, bad(fmt.Errorf("hash to sha256:%s (hash mismatch)", got))
	}
	return body, nil
}

func (a blobTable) get(ctx context.Context, runID, sha string) ([]byte, error) {
	e, ok, err := queryOne(ctx, a.s.db, scanBlob, `SELECT `+blobCols+` FROM artifacts a JOIN artifact_blobs b ON b.sha256 = a.sha256
		WHERE a.run_id = $1 AND a.sha256 = $2`, runID, sha)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("store: run %s has no artifact %s", runID, sha)
	}
	return checkBlob(e)
}

// verify reads the run's artifacts one row at a time.
func (a blobTable) verify(ctx context.Context, runID string, keep int) (damaged []error, n, total int, err error) {
	s := a.s
	err = queryEach(ctx, s.db, scanBlob, func(e blobEntry) {
		total++
		if _, err := checkBlob(e); err != nil {
			if n++; n <= keep {
				damaged = append(damaged, err)
			}
		}
	}, `SELECT `+blobCols+` FROM artifacts a JOIN artifact_blobs b ON b.sha256 = a.sha256 WHERE a.run_id = $1 ORDER BY a.sha256`, runID)
	if err == nil {
		var indexed int
		if err = s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM artifacts WHERE run_id = $1`, runID).Scan(&indexed); err == nil && indexed != total {
			damaged = append(damaged, &ArtifactError{RunID: runID, Pack: inDatabase,
				Err: fmt.Errorf("are missing: %d artifacts are indexed and %d have bytes", indexed, total)})
			n++
		}
	}
	return damaged, n, total, err
}
