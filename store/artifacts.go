package store

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/flate"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Blob is an artifact as stored: compressed when that saves space.
type Blob struct {
	Encoding string // "deflate" or "identity"
	Data     []byte
}

// Pack addresses data by its sha256 and prepares it for storage. Artifacts
// are stored as they are: compressing them cost more time than the smaller
// writes saved (measured with BenchmarkDiscoveryDeck), and the encoding
// column leaves room to change that.
func Pack(data []byte) (string, Blob) {
	return ArtifactID(data), Blob{Encoding: "identity", Data: data}
}

func unpack(enc string, data []byte) ([]byte, error) {
	switch enc {
	case "identity":
		return data, nil
	case "deflate":
		return io.ReadAll(flate.NewReader(bytes.NewReader(data)))
	}
	return nil, fmt.Errorf("unknown artifact encoding %q", enc)
}

// ArtifactID is the sha256 of data in hex: the address of an artifact.
func ArtifactID(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Artifact reads an artifact of a run back and verifies its hash: a
// damaged or truncated pack is an *ArtifactError naming the pack file, the
// offset and the sha256.
func (s *Store) Artifact(ctx context.Context, runID, sha string) ([]byte, error) {
	sha = strings.TrimPrefix(sha, "sha256:")
	if len(sha) != 64 || strings.Trim(sha, "0123456789abcdef") != "" {
		return nil, fmt.Errorf("store: %q is not a sha256", sha)
	}
	return s.arts.get(ctx, runID, sha)
}

// artifactStore keeps the bytes of artifacts, which the artifacts table
// indexes by run and sha256. A store has one, chosen when it is opened:
// pack files beside the database (packFiles, SQLite) or a table of the
// database (blobTable, PostgreSQL).
type artifactStore interface {
	// put stores the sessions' artifacts that the run does not have yet
	// and indexes them in tx. Once tx is committed, the caller calls
	// committed (when not nil).
	put(ctx context.Context, tx *txn, runID string, sessions []Session) (committed func(), err error)
	// get reads one artifact of a run and verifies its hash.
	get(ctx context.Context, runID, sha string) ([]byte, error)
	// verify checks every artifact of a run against its hash: the damaged
	// ones (up to keep), how many are damaged, and how many there are.
	verify(ctx context.Context, runID string, keep int) (damaged []error, n, total int, err error)
	// close releases what the store holds open.
	close() error
}

// packFiles keeps each run's artifacts in a pack file in its directory.
type packFiles struct {
	s *Store

	mu    sync.Mutex
	packs map[string]*pack // open pack files by run id (only the writer uses them)
	// known is, by run, artifacts this process stored or found stored in
	// the run's index, each in its generation, in transactions that
	// committed: the most recent ones only (recentSet). Artifacts are
	// never taken out of a run, so one known is not asked of the index
	// again.
	known map[string]*recentSet
}

// artifactGen is how many sessions, by schedule position, make a
// generation of a SQLite run's artifact index (schema section
// "artifact_gen"): a run stores an artifact once in each generation whose
// sessions have it. Large enough that what is stored again is little (the
// answers that recur across a run's sessions, once every 8,192 sessions),
// small enough that the part of the index a run is writing to stays in
// the writer's page cache (about four artifacts a session, 50 bytes an
// entry: under 2 MB).
const artifactGen = 8192

// generation is the generation of the artifacts of a session at schedule
// position pos.
func generation(pos int) int { return max(pos, 0) / artifactGen }

// artKey is an artifact in a generation: its sha256 as bytes.
type artKey struct {
	gen int
	sha [32]byte
}

// recentSet holds the most recent artifacts added to it (a hash in a
// generation), between knownLimit/2 and knownLimit of them (40 bytes and
// the map's overhead each, about a megabyte at most): a session's answers
// recur in later sessions of the same case (a run's simulated or cached
// answers most of all), and the hashes of the last few thousand sessions
// catch most of them, as a set of every hash would grow with the run.
type recentSet struct{ cur, prev map[artKey]struct{} }

const knownLimit = 16384

func (r *recentSet) has(k artKey) bool {
	if _, ok := r.cur[k]; ok {
		return true
	}
	_, ok := r.prev[k]
	return ok
}

func (r *recentSet) add(k artKey) {
	if len(r.cur) >= knownLimit/2 {
		r.prev, r.cur = r.cur, make(map[artKey]struct{}, knownLimit/2)
	}
	r.cur[k] = struct{}{}
}

// shaKey is a hex sha256 as bytes; ok is false for anything else.
func shaKey(sha string) (k [32]byte, ok bool) {
	if len(sha) != 64 {
		return k, false
	}
	_, err := hex.Decode(k[:], []byte(sha))
	return k, err == nil
}

func (a *packFiles) get(ctx context.Context, runID, sha string) ([]byte, error) {
	e, ok, err := queryOne(ctx, a.s.db, scanArtifact, inAnyGeneration, shaHead(sha), runID, sha)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("store: run %s has no artifact %s", runID, sha)
	}
	f, err := os.Open(filepath.Join(a.s.RunDir(runID), e.pack))
	if err != nil {
		return nil, fmt.Errorf("store: artifact %s: %w", sha, err)
	}
	defer f.Close()
	return readArtifact(f, runID, e)
}

func (a *packFiles) close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var errs []error
	for _, p := range a.packs {
		errs = append(errs, p.f.Close())
	}
	a.packs = map[string]*pack{}
	return errors.Join(errs...)
}

// ErrArtifactCorrupt is matched (errors.Is) by every *ArtifactError.
var ErrArtifactCorrupt = errors.New("artifact is damaged")

// ArtifactError is an artifact whose stored bytes are not what was stored:
// they do not hash to its sha256, or the pack ends before them.
type ArtifactError struct {
	RunID  string
	SHA    string // the sha256 it is stored under
	Pack   string // the pack file
	Offset int64  // where in the pack it starts
	Length int64  // its stored length
	Err    error  // what is wrong
}

func (e *ArtifactError) Error() string {
	if e.Pack == inDatabase {
		return fmt.Sprintf("store: artifact sha256:%s of run %s is damaged: its %d bytes in the database's artifact_blobs table %v; "+
			"restore the database from a backup", e.SHA, e.RunID, e.Length, e.Err)
	}
	return fmt.Sprintf("store: artifact sha256:%s of run %s is damaged: %s holds %d bytes at offset %d that %v; "+
		"the pack file was changed or cut short after it was written, restore it from a backup",
		e.SHA, e.RunID, e.Pack, e.Length, e.Offset, e.Err)
}

func (e *ArtifactError) Unwrap() error { return e.Err }

func (e *ArtifactError) Is(target error) bool { return target == ErrArtifactCorrupt }

// readArtifact reads one indexed artifact from its open pack and verifies
// its hash.
func readArtifact(f *os.File, runID string, e packEntry) ([]byte, error) {
	bad := func(err error) error {
		return &ArtifactError{RunID: runID, SHA: e.sha, Pack: f.Name(), Offset: e.offset, Length: e.length, Err: err}
	}
	body := make([]byte, e.length)
	if n, err := f.ReadAt(body, e.offset); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, bad(fmt.Errorf("end after %d bytes (the pack is truncated)", n))
		}
		return nil, fmt.Errorf("store: artifact %s: reading %s: %w", e.sha, f.Name(), err)
	}
	body, err := unpack(e.encoding, body)
	if err != nil {
		return nil, bad(fmt.Errorf("do not decode: %w", err))
	}
	if got := ArtifactID(body); got != e.sha {
		return nil, bad(fmt.Errorf("hash to sha256:%s (hash mismatch)", got))
	}
	return body, nil
}

// VerifyArtifacts reads every artifact a run has stored and checks it
// against its sha256, so that a damaged pack is found before a report or an
// export is made from the run. It returns nil when all are whole, and
// otherwise every damaged artifact (up to ten, then a count) as
// *ArtifactErrors (errors.Is ErrArtifactCorrupt).
func (s *Store) VerifyArtifacts(ctx context.Context, runID string) error {
	const shown = 10
	errs, damaged, total, err := s.arts.verify(ctx, runID, shown)
	if err != nil {
		return err
	}
	if damaged > shown {
		errs = append(errs, fmt.Errorf("store: run %s: %d more artifacts are damaged (%d of %d in all)", runID, damaged-shown, damaged, total))
	}
	return errors.Join(errs...)
}

func (a *packFiles) verify(ctx context.Context, runID string, keep int) (errs []error, damaged, total int, err error) {
	files := map[string]*os.File{}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	// The entries are read one row at a time, never all at once: a run can
	// hold millions. fatal stops the checks at the first error that is not
	// a damaged artifact.
	var fatal error
	err = queryEach(ctx, a.s.db, scanArtifact, func(e packEntry) {
		if fatal != nil {
			return
		}
		if fatal = ctx.Err(); fatal != nil {
			return
		}
		total++
		f := files[e.pack]
		if f == nil {
			var err error
			if f, err = os.Open(filepath.Join(a.s.RunDir(runID), e.pack)); err != nil {
				fatal = fmt.Errorf("store: run %s: verifying artifacts: %w", runID, err)
				return
			}
			files[e.pack] = f
		}
		if _, err := readArtifact(f, runID, e); err != nil {
			if !errors.Is(err, ErrArtifactCorrupt) {
				fatal = err
				return
			}
			if damaged++; damaged <= keep {
				errs = append(errs, err)
			}
		}
	}, inPackOrder, runID)
	if err == nil {
		err = fatal
	}
	return errs, damaged, total, err
}

// inAnyGeneration finds an artifact of a run (arguments: the hash's first
// shaPrefix digits, the run, the hash) in whichever generation has it:
// it steps through the run's generations in artifacts_by_gen, from the
// first, each step a seek to the next generation there, and looks the
// hash up in each (CROSS JOIN keeps SQLite to that order: on a store
// without statistics it would read the run's whole index and look each
// row up among the generations).
const inAnyGeneration = `WITH RECURSIVE gens(g) AS (
		SELECT MIN(gen) FROM artifacts INDEXED BY artifacts_by_gen WHERE run_id = $2
		UNION ALL
		SELECT (SELECT MIN(gen) FROM artifacts INDEXED BY artifacts_by_gen WHERE run_id = $2 AND gen > g) FROM gens WHERE g IS NOT NULL)
	SELECT ` + artifactCols + ` FROM gens CROSS JOIN artifacts INDEXED BY artifacts_by_gen
	WHERE g IS NOT NULL AND run_id = $2 AND gen = g AND substr(sha256, 1, 12) = $1 AND sha256 = $3 LIMIT 1`

// inPackOrder is a run's artifacts in the order its packs hold them, read
// through the artifacts_by_pack index (no sort, whatever the run's size).
const inPackOrder = `SELECT ` + artifactCols + ` FROM artifacts WHERE run_id = $1 ORDER BY pack, pack_offset`

// packName is the file that holds a run's artifacts.
const packName = "artifacts.pack"

// pack is an append-only file of artifacts for one run.
type pack struct {
	f    *os.File
	size int64
}

type packEntry struct {
	sha, pack, encoding string
	offset, length      int64
}

// openPack opens the run's pack for appending, once; the caller holds a.mu.
func (a *packFiles) openPack(runID string) (*pack, error) {
	if p := a.packs[runID]; p != nil {
		return p, nil
	}
	f, err := os.OpenFile(filepath.Join(a.s.RunDir(runID), packName), os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: pack: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("store: pack: %w", err)
	}
	p := &pack{f: f, size: fi.Size()}
	a.packs[runID] = p
	return p, nil
}

// put writes the sessions' new artifacts to the run's pack in
// one write and indexes them in tx. Which artifacts the run has already is
// asked of its index, for this batch's only: a set of every artifact
// written grew by about a kilobyte a session.
//
// The asking and the indexing go together, a chunk of hashes at a time, on
// the transaction's connection: the lookup reads the index pages the insert
// then changes, so they are still in the page cache. Asking for the whole
// batch first read every page twice on a large run (the batch's hashes,
// scattered over the index, pushed each other's pages out of the cache),
// and on the pool's other connection.
//
// Artifacts this process knows the run's index holds (known) are not asked
// for at all.
func (a *packFiles) put(ctx context.Context, tx *txn, runID string, sessions []Session) (func(), error) {
	s := a.s
	a.mu.Lock()
	defer a.mu.Unlock()
	p, err := a.openPack(runID)
	if err != nil {
		return nil, err
	}
	known := a.known[runID]
	batch := map[genSHA]Blob{}
	for _, se := range sessions {
		g := generation(se.SchedulePos)
		for sha, blob := range se.Artifacts {
			if k, ok := shaKey(sha); ok && known != nil && known.has(artKey{g, k}) {
				continue
			}
			batch[genSHA{g, sha}] = blob
		}
	}
	keys := slices.SortedFunc(maps.Keys(batch), func(a, b genSHA) int {
		return cmp.Or(cmp.Compare(a.gen, b.gen), strings.Compare(a.sha, b.sha))
	})
	// The bytes go to the pack before the rows that reference them commit:
	// a crash in between leaves unreferenced bytes, never a dangling row.
	w := bufio.NewWriterSize(p.f, 256<<10)
	start := p.size
	for len(keys) > 0 {
		// A chunk of one generation's hashes.
		n := 1
		for n < min(chunkRows, len(keys)) && keys[n].gen == keys[0].gen {
			n++
		}
		chunk := keys[:n]
		keys = keys[n:]
		stored, err := s.indexed(ctx, tx, runID, chunk)
		if err != nil {
			return nil, err
		}
		arts := artifactBulk("", "gen")
		for _, k := range chunk {
			if stored[k.sha] {
				continue
			}
			blob := batch[k]
			arts.add(runID, k.sha, packName, p.size, len(blob.Data), blob.Encoding, k.gen)
			if _, err := w.Write(blob.Data); err != nil {
				return nil, s.failPack(p, start, err)
			}
			p.size += int64(len(blob.Data))
		}
		if err := s.execBulk(ctx, tx, arts); err != nil {
			// The transaction is rolled back: the bytes written are
			// unreferenced, and the next batch writes after them.
			_ = s.failPack(p, start, err)
			return nil, err
		}
	}
	if err := w.Flush(); err != nil {
		return nil, s.failPack(p, start, err)
	}
	return func() { a.remember(runID, batch) }, nil
}

// genSHA is an artifact in a generation.
type genSHA struct {
	gen int
	sha string
}

// remember adds the artifacts of a committed batch to what is known of
// the run's index.
func (a *packFiles) remember(runID string, batch map[genSHA]Blob) {
	a.mu.Lock()
	defer a.mu.Unlock()
	known := a.known[runID]
	if known == nil {
		if len(a.known) >= 4 {
			clear(a.known) // a process that writes many runs keeps the latest
		}
		known = &recentSet{cur: map[artKey]struct{}{}}
		a.known[runID] = known
	}
	for k := range batch {
		if sha, ok := shaKey(k.sha); ok {
			known.add(artKey{k.gen, sha})
		}
	}
}

// indexed reports which of the hashes of chunk (at most chunkRows, all of
// one generation) the run's artifact index has in that generation, or
// among the rows stored before there were generations (-1: a run of an
// older store that is resumed stores nothing again), through one
// statement prepared once: a chunk of fewer hashes repeats its last. The
// statement finds the artifacts whose hashes begin as these do
// (artifacts_by_gen); one of another hash with the same beginning is in
// the map too, where nobody asks for it.
func (s *Store) indexed(ctx context.Context, tx *txn, runID string, chunk []genSHA) (map[string]bool, error) {
	st, err := s.lookupStmt(ctx)
	if err != nil {
		return nil, s.fail(err)
	}
	args := make([]any, 0, 2+chunkRows)
	args = append(args, runID, chunk[0].gen)
	for i := range chunkRows {
		args = append(args, shaHead(chunk[min(i, len(chunk)-1)].sha))
	}
	rows, err := tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	if err != nil {
		return nil, s.fail(err)
	}
	defer rows.Close()
	have := map[string]bool{}
	for rows.Next() {
		var sha string
		if err := rows.Scan(&sha); err != nil {
			return nil, s.fail(err)
		}
		have[sha] = true
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(err)
	}
	return have, nil
}

// lookupStmt is the prepared lookup of chunkRows hashes in a generation
// of a run's artifact index, by their first shaPrefix hex digits.
func (s *Store) lookupStmt(ctx context.Context) (*sql.Stmt, error) {
	const key = "artifacts/lookup"
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if st, ok := s.stmts[key]; ok {
		return st, nil
	}
	st, err := s.db.PrepareContext(ctx, `SELECT sha256 FROM artifacts INDEXED BY artifacts_by_gen
		WHERE run_id = $1 AND gen IN ($2, -1) AND substr(sha256, 1, 12) IN (`+placeholders(3, chunkRows)+`)`)
	if err != nil {
		return nil, err
	}
	s.stmts[key] = st
	return st, nil
}

// failPack undoes the bookkeeping of a failed append: the entries will be
// written again, after whatever part of them reached the file.
func (s *Store) failPack(p *pack, start int64, err error) error {
	if fi, statErr := p.f.Stat(); statErr == nil {
		p.size = fi.Size()
	} else {
		p.size = start
	}
	return fmt.Errorf("store: writing artifacts: %w", err)
}

// StreamFileAtomic is writeFile for output written a piece at a time
// (an export of a large run): write gets the file (or the temporary file
// beside it) and nothing is held in memory; if write fails, a regular file
// at path is left as it was.
func StreamFileAtomic(path string, write func(w io.Writer) error) error {
	return streamFile(path, write, 0o644)
}

// writeFile writes data to path, for output files a user names
// (-o FILE). What it does depends on what is at path:
//
//   - nothing, or a regular file: data goes to a temporary file beside it,
//     which is synced and renamed into place, so readers never see half a
//     file. A replaced file keeps its permissions; a new one gets 0644
//     (less the umask).
//   - a device, a FIFO or a socket (/dev/null, /dev/stdout, a pipe): data is
//     written to it in place (opened write-only and truncated), never
//     replaced by a regular file.
//   - a symlink: data is written through to the file it points to (the
//     link is kept), by the same rules; a link to nothing creates its
//     target.
//   - a directory: an error.
//
// perm is the permissions of a new file (output files get 0644, the
// store's own files 0600).
func writeFile(path string, data []byte, perm fs.FileMode) error {
	return streamFile(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}, perm)
}

func streamFile(path string, write func(w io.Writer) error, perm fs.FileMode) error {
	fi, err := os.Stat(path) // through links
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Nothing there, or a link to nothing: the file is created where
		// the last link points.
		target, err := danglingTarget(path)
		if err != nil {
			return err
		}
		return replaceFile(target, write, perm, false)
	case err != nil:
		return err
	case fi.Mode().IsRegular():
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			return err
		}
		return replaceFile(target, write, fi.Mode().Perm(), true)
	case fi.IsDir():
		return fmt.Errorf("write %s: is a directory", path)
	}
	// A device, a FIFO or a socket (through any links, which the system
	// follows, /dev/stdout's to /proc included): written in place.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// danglingTarget follows path while it is a symlink and returns the path
// the last link names, which does not exist; path itself when it is not a
// link.
func danglingTarget(path string) (string, error) {
	for range 255 {
		fi, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return path, nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return path, nil
		}
		dest, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(path), dest)
		}
		path = dest
	}
	return "", fmt.Errorf("write %s: too many levels of symbolic links", path)
}

// replaceFile writes data to a new file beside path and renames it over
// path. A replaced file's permissions are kept exactly (keep); a new file
// is created with perm less the umask.
func replaceFile(path string, write func(w io.Writer) error, perm fs.FileMode, keep bool) error {
	f, err := createTemp(path, perm)
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if keep {
		if err := f.Chmod(perm); err != nil {
			f.Close()
			return err
		}
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	if err := write(bw); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// createTemp creates a new file beside path with perm less the umask (which
// os.CreateTemp does not apply: it always makes 0600).
func createTemp(path string, perm fs.FileMode) (*os.File, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	for range 100 {
		name, err := newToken()
		if err != nil {
			return nil, err
		}
		f, err := os.OpenFile(filepath.Join(dir, ".tmp-"+base+"-"+name[:12]), os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("write %s: cannot create a temporary file beside it", path)
}
