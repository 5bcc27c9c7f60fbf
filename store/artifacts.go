package store

import (
	"bytes"
	"compress/flate"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
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
	var body []byte
	var enc string
	err := s.db.QueryRowContext(ctx, `SELECT encoding, body FROM artifacts WHERE run_id = ? AND sha256 = ?`, runID, sha).Scan(&enc, &body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: run %s has no artifact %s", runID, sha)
	}
	if err != nil {
		return nil, fmt.Errorf("store: artifact: %w", err)
	}
	if body, err = unpack(enc, body); err != nil {
		return nil, fmt.Errorf("store: artifact %s: %w", sha, err)
	}
	if ArtifactID(body) != sha {
		return nil, fmt.Errorf("store: artifact %s is corrupt (hash mismatch)", sha)
	}
	return body, nil
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
