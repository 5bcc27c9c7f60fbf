package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// PutArtifact stores data under its sha256 in the run's artifact folder,
// owner-only, and returns the hash. Storing the same bytes twice is free.
// The file appears whole or not at all.
func (s *Store) PutArtifact(runID string, data []byte) (string, error) {
	sum := sha256.Sum256(data)
	h := hex.EncodeToString(sum[:])
	dir := filepath.Join(s.RunDir(runID), "artifacts", h[:2])
	path := filepath.Join(dir, h)
	if _, err := os.Stat(path); err == nil {
		return h, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("store: artifact: %w", err)
	}
	if err := WriteFileAtomic(path, data); err != nil {
		return "", fmt.Errorf("store: artifact: %w", err)
	}
	return h, nil
}

// Artifact reads an artifact back and verifies its hash.
func (s *Store) Artifact(runID, sha string) ([]byte, error) {
	if len(sha) != 64 || strings.Trim(sha, "0123456789abcdef") != "" {
		return nil, fmt.Errorf("store: %q is not a sha256", sha)
	}
	data, err := os.ReadFile(filepath.Join(s.RunDir(runID), "artifacts", sha[:2], sha))
	if err != nil {
		return nil, fmt.Errorf("store: artifact: %w", err)
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != sha {
		return nil, fmt.Errorf("store: artifact %s is corrupt (hash mismatch)", sha)
	}
	return data, nil
}

// WriteFileAtomic writes data to a temporary file beside path, syncs it and
// renames it into place, owner-only, so readers never see half a file.
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
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
