package store

import (
	"bufio"
	"bytes"
	"compress/flate"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
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

// Artifact reads an artifact of a run back and verifies its hash.
func (s *Store) Artifact(ctx context.Context, runID, sha string) ([]byte, error) {
	sha = strings.TrimPrefix(sha, "sha256:")
	if len(sha) != 64 || strings.Trim(sha, "0123456789abcdef") != "" {
		return nil, fmt.Errorf("store: %q is not a sha256", sha)
	}
	e, ok, err := queryOne(ctx, s.db, scanArtifact, `SELECT `+artifactCols+` FROM artifacts WHERE run_id = ? AND sha256 = ?`, runID, sha)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("store: run %s has no artifact %s", runID, sha)
	}
	f, err := os.Open(filepath.Join(s.RunDir(runID), e.pack))
	if err != nil {
		return nil, fmt.Errorf("store: artifact: %w", err)
	}
	defer f.Close()
	body := make([]byte, e.length)
	if _, err := f.ReadAt(body, e.offset); err != nil {
		return nil, fmt.Errorf("store: artifact %s: reading pack: %w", sha, err)
	}
	if body, err = unpack(e.encoding, body); err != nil {
		return nil, fmt.Errorf("store: artifact %s: %w", sha, err)
	}
	if ArtifactID(body) != sha {
		return nil, fmt.Errorf("store: artifact %s is corrupt (hash mismatch)", sha)
	}
	return body, nil
}

// packName is the file that holds a run's artifacts.
const packName = "artifacts.pack"

// pack is an append-only file of artifacts for one run.
type pack struct {
	f    *os.File
	size int64
	seen map[string]bool // artifacts already indexed for this run
}

type packEntry struct {
	sha, pack, encoding string
	offset, length      int64
}

func (s *Store) openPack(ctx context.Context, runID string) (*pack, error) {
	if p := s.packs[runID]; p != nil {
		return p, nil
	}
	f, err := os.OpenFile(filepath.Join(s.RunDir(runID), packName), os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: pack: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("store: pack: %w", err)
	}
	p := &pack{f: f, size: fi.Size(), seen: map[string]bool{}}
	err = queryEach(ctx, s.db, scanArtifact, func(e packEntry) { p.seen[e.sha] = true },
		`SELECT `+artifactCols+` FROM artifacts WHERE run_id = ?`, runID)
	if err != nil {
		f.Close()
		return nil, err
	}
	s.packs[runID] = p
	return p, nil
}

// appendArtifacts writes the sessions' new artifacts to the run's pack in
// one write and returns their index entries.
func (s *Store) appendArtifacts(ctx context.Context, runID string, sessions []Session) ([]packEntry, error) {
	p, err := s.openPack(ctx, runID)
	if err != nil {
		return nil, err
	}
	var entries []packEntry
	w := bufio.NewWriterSize(p.f, 256<<10)
	start := p.size
	for _, se := range sessions {
		for sha, blob := range se.Artifacts {
			if p.seen[sha] {
				continue
			}
			p.seen[sha] = true
			entries = append(entries, packEntry{sha: sha, pack: packName, encoding: blob.Encoding,
				offset: p.size, length: int64(len(blob.Data))})
			if _, err := w.Write(blob.Data); err != nil {
				return nil, s.failPack(runID, p, start, entries, err)
			}
			p.size += int64(len(blob.Data))
		}
	}
	if err := w.Flush(); err != nil {
		return nil, s.failPack(runID, p, start, entries, err)
	}
	return entries, nil
}

// failPack undoes the bookkeeping of a failed append: the entries will be
// written again, after whatever part of them reached the file.
func (s *Store) failPack(runID string, p *pack, start int64, entries []packEntry, err error) error {
	s.forget(runID, entries)
	if fi, statErr := p.f.Stat(); statErr == nil {
		p.size = fi.Size()
	} else {
		p.size = start
	}
	return fmt.Errorf("store: writing artifacts: %w", err)
}

// forget drops entries from the seen set after a failed write or commit, so
// they are written again with the next attempt to store them.
func (s *Store) forget(runID string, entries []packEntry) {
	if p := s.packs[runID]; p != nil {
		for _, e := range entries {
			delete(p.seen, e.sha)
		}
	}
}

// WriteFileAtomic writes data to a temporary file beside path and renames it
// into place, owner-only, so readers never see half a file.
func WriteFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
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
