package replay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
)

// Journal records a run's answers as they arrive, so that a process that
// continues the run (a resume after a kill, another worker on this
// machine) pays for no answered call again. Entries are keyed as Cache
// keys them. Unlike Cache, which keeps one file per answer for a cache
// shared across runs, a journal appends to one file per process: creating
// a file for every answer cost more CPU than everything else a call does.
// The files earlier processes left are read once, when the journal opens:
// their keys are indexed and an answer is read back only when asked for.
// A line cut short by a kill is ignored.
//
// Answers are written in groups, with the promise of one write each: an
// answer is in the file (the operating system's, not yet the disk's)
// before the call that brought it returns. While one group is being
// written, the answers that arrive wait and go together in the next write,
// so a busy run makes one write per group rather than one per answer, and
// a quiet one waits for nothing.
type Journal struct {
	dir   string
	inner provider.Provider

	mu  sync.Mutex
	own *os.File // this process's file, made at its first answer
	// ownAt is the own file's place in files once an entry of its own was
	// indexed (-1 before).
	ownAt int
	index *lineIndex
	files []*os.File // earlier processes' files, then the own one
	// bases are where each file's lines start in the index's positions,
	// counted across the files; end is where the next file's start.
	bases []uint64
	end   uint64
	// Group writing: pending holds the lines of the next group (number
	// next); written is how many groups are written; writing says one is
	// being written; queued is the own file's length once pending is
	// written; spare is a written group's buffer, kept for reuse.
	pending, spare []byte
	next, written  uint64
	writing        bool
	queued         int64
	wrote          *sync.Cond
	writeErr       error

	hits, misses atomic.Int64
}

// The index (lineIndex) maps the first 8 bytes of a key to where its line
// starts: a position across the files, each file's lines from its base.
// Reading an entry checks the whole key written at the start of its line,
// so two keys that share their first 8 bytes (about one pair in 6 billion
// among 3 million answers) cost at most a request asked again, never a
// wrong answer: the later one is indexed, the earlier one is missed.
func prefix(key [32]byte) uint64 { return binary.LittleEndian.Uint64(key[:8]) }

// splitAt is the file and offset of an index position. j.mu is held.
func (j *Journal) splitAt(pos uint64) (file int, off int64) {
	file = sort.Search(len(j.bases), func(i int) bool { return j.bases[i] > pos }) - 1
	return file, int64(pos - j.bases[file])
}

// prefixAt reads the key prefix of the line at an index position (for the
// index, to tell two prefixes with the same tag apart). j.mu is held.
func (j *Journal) prefixAt(pos uint64) (uint64, bool) {
	file, off := j.splitAt(pos)
	if file < 0 || file >= len(j.files) {
		return 0, false
	}
	var h [16]byte
	if _, err := j.files[file].ReadAt(h[:], off); err != nil {
		return 0, false
	}
	var key [8]byte
	if _, err := hex.Decode(key[:], h[:]); err != nil {
		return 0, false
	}
	return binary.LittleEndian.Uint64(key[:]), true
}

// journalSuffix names journal files; keyWidth is a key's hex length, which
// starts every line, followed by a tab and the entry's JSON.
const (
	journalSuffix = ".journal"
	keyWidth      = 64
)

// OpenJournal opens the journal in dir (created owner-only) around inner,
// indexing the entries earlier processes left there.
func OpenJournal(dir string, inner provider.Provider) (*Journal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	j := &Journal{dir: dir, inner: inner, index: newLineIndex(), ownAt: -1}
	j.wrote = sync.NewCond(&j.mu)
	names, err := filepath.Glob(filepath.Join(dir, "*"+journalSuffix))
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	for _, name := range names {
		if err := j.indexFile(name); err != nil {
			j.Close()
			return nil, err
		}
	}
	return j, nil
}

// indexFile adds the whole lines of an earlier process's file to the index.
func (j *Journal) indexFile(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	base := j.end
	j.files = append(j.files, f)
	j.bases = append(j.bases, base)
	r := bufio.NewReaderSize(f, 1<<16)
	var off int64
	for {
		line, err := r.ReadSlice('\n')
		n := len(line)
		var head [keyWidth + 1]byte
		h := copy(head[:], line)
		for err == bufio.ErrBufferFull {
			// A long answer: read the rest of its line without keeping it.
			var more []byte
			more, err = r.ReadSlice('\n')
			n += len(more)
		}
		if err != nil {
			// The end, or a last line a kill cut short: the next file's
			// lines start past this one's whole lines.
			j.end = base + uint64(off)
			return nil
		}
		var key [32]byte
		if h == keyWidth+1 && n > keyWidth+2 && head[keyWidth] == '\t' {
			if _, herr := hex.Decode(key[:], head[:keyWidth]); herr == nil {
				j.index.put(prefix(key), base+uint64(off), j.prefixAt)
			}
		}
		off += int64(n)
	}
}

// Info is the wrapped provider's.
func (j *Journal) Info() provider.Info { return j.inner.Info() }

// Counts returns the calls answered from the journal and those asked.
func (j *Journal) Counts() (hits, misses int64) { return j.hits.Load(), j.misses.Load() }

// Chat answers a request an earlier process recorded, or asks the wrapped
// provider and appends the answer to this process's file.
func (j *Journal) Chat(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, &provider.Error{Kind: provider.Canceled, Err: err}
	}
	key := requestKey(ctx, j.inner.Info(), req)
	if resp, ok := j.recorded(key); ok {
		j.hits.Add(1)
		return resp, nil
	}
	resp, err := j.inner.Chat(ctx, req)
	if err != nil {
		return nil, err
	}
	j.misses.Add(1)
	b, _ := json.Marshal(entry{Response: *resp, Raw: resp.Raw})
	// A failed write only costs a later process a call; the answer is
	// returned.
	_ = j.append(key, b, false)
	return resp, nil
}

// Key is the key of a request in the journal (the cache's key).
func (j *Journal) Key(ctx context.Context, req *chat.Request) [32]byte {
	return requestKey(ctx, j.inner.Info(), req)
}

// Lookup answers a request by its key from what the journal holds.
func (j *Journal) Lookup(key [32]byte) (*chat.Response, bool) {
	resp, ok := j.recorded(key)
	if ok {
		j.hits.Add(1)
	}
	return resp, ok
}

// Keep writes an answer that came another way (a batch's result) to the
// journal. With later, this process can look it up too (an answer
// collected for sessions that have yet to ask); otherwise only a later
// process can, and the journal's memory does not grow with it.
func (j *Journal) Keep(key [32]byte, resp *chat.Response, later bool) error {
	j.misses.Add(1)
	b, err := json.Marshal(entry{Response: *resp, Raw: resp.Raw})
	if err != nil {
		return err
	}
	return j.append(key, b, later)
}

// Answer is Lookup without counting a hit: a batch run asks it again for
// the calls a session made in earlier passes.
func (j *Journal) Answer(key [32]byte) (*chat.Response, bool) { return j.recorded(key) }

// failed is a failed attempt as the journal keeps it.
type failed struct {
	Failure struct {
		Kind   provider.Kind `json:"kind"`
		Status int           `json:"status,omitempty"`
		Msg    string        `json:"msg"`
	} `json:"failure"`
}

// KeepFailure writes a failed attempt (a request a batch failed) under its
// own key, for this process and later ones.
func (j *Journal) KeepFailure(key [32]byte, e *provider.Error) error {
	var f failed
	f.Failure.Kind, f.Failure.Status, f.Failure.Msg = e.Kind, e.Status, e.Msg
	if e.Err != nil {
		f.Failure.Msg += ": " + e.Err.Error()
	}
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return j.append(key, b, true)
}

// Failure reads a failed attempt KeepFailure wrote.
func (j *Journal) Failure(key [32]byte) (*provider.Error, bool) {
	b, ok := j.read(key)
	if !ok {
		return nil, false
	}
	var f failed
	if json.Unmarshal(b, &f) != nil || f.Failure.Kind == "" {
		return nil, false
	}
	return &provider.Error{Kind: f.Failure.Kind, Status: f.Failure.Status, Msg: f.Failure.Msg}, true
}

// read reads the entry with key: the JSON of its line, once the key
// written before it is key's.
func (j *Journal) read(key [32]byte) ([]byte, bool) {
	// The lines that may be key's (almost always one), read outside the
	// lock.
	type at struct {
		f   *os.File
		off int64
	}
	var buf [2]at
	lines := buf[:0]
	j.mu.Lock()
	j.index.get(prefix(key), func(pos uint64) bool {
		if file, off := j.splitAt(pos); file >= 0 && file < len(j.files) {
			lines = append(lines, at{j.files[file], off})
		}
		return false
	})
	j.mu.Unlock()
	for _, l := range lines {
		if b, ok := readLine(l.f, l.off, key); ok {
			return b, true
		}
	}
	return nil, false
}

// readLine reads the entry of the line at off of f, when its key is key.
func readLine(f *os.File, off int64, key [32]byte) ([]byte, bool) {
	// The line's length is not kept: read from its start until its
	// newline, 4 KB first (most entries fit), then as much again.
	b := make([]byte, 0, 4<<10)
	for {
		n, err := f.ReadAt(b[len(b):cap(b)], off+int64(len(b)))
		from := max(len(b), keyWidth+1)
		b = b[:len(b)+n]
		if len(b) > keyWidth {
			var want [keyWidth]byte
			hex.Encode(want[:], key[:])
			if !bytes.Equal(b[:keyWidth], want[:]) || b[keyWidth] != '\t' {
				return nil, false
			}
			if from < len(b) {
				if nl := bytes.IndexByte(b[from:], '\n'); nl >= 0 {
					return b[keyWidth+1 : from+nl], true
				}
			}
		}
		if err != nil {
			return nil, false // no newline: not a whole line
		}
		b = append(b, make([]byte, cap(b))...)[:len(b)]
	}
}

// recorded reads an earlier process's answer to the request with key.
func (j *Journal) recorded(key [32]byte) (*chat.Response, bool) {
	b, ok := j.read(key)
	if !ok || bytes.HasPrefix(b, []byte(`{"failure":`)) {
		return nil, false
	}
	var e entry
	if json.Unmarshal(b, &e) != nil {
		return nil, false
	}
	e.Response.Raw = e.Raw
	return &e.Response, true
}

// append writes one line, key and entry, to this process's file, with
// the lines other calls appended meanwhile, in one write (a kill leaves
// whole lines and at most one cut short); it returns once its line is
// written.
func (j *Journal) append(key [32]byte, entry []byte, index bool) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.own == nil {
		host, _ := os.Hostname()
		name := fmt.Sprintf("%s-%d-%d%s", strings.ReplaceAll(host, string(filepath.Separator), "_"), os.Getpid(), time.Now().UnixNano(), journalSuffix)
		f, err := os.OpenFile(filepath.Join(j.dir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		j.own = f
	}
	off := j.queued
	j.pending = hex.AppendEncode(j.pending, key[:])
	j.pending = append(append(append(j.pending, '\t'), entry...), '\n')
	j.queued += int64(keyWidth + 2 + len(entry))
	group := j.next
	var err error
	for j.written <= group {
		if j.writing {
			j.wrote.Wait()
			continue
		}
		// Write the group gathered so far, this line's among them.
		buf := j.pending
		j.pending, j.spare = j.spare[:0], nil
		j.next++
		upto := j.next
		j.writing = true
		f := j.own
		j.mu.Unlock()
		_, werr := f.Write(buf)
		j.mu.Lock()
		j.writing = false
		j.written = upto
		j.writeErr = werr
		if cap(buf) <= 1<<20 {
			j.spare = buf // a group of large answers is not kept
		}
		j.wrote.Broadcast()
	}
	err = j.writeErr
	if err != nil || !index {
		return err
	}
	if j.ownAt < 0 {
		r, err := os.Open(j.own.Name())
		if err != nil {
			return err
		}
		j.ownAt = len(j.files)
		j.files = append(j.files, r)
		j.bases = append(j.bases, j.end)
	}
	j.index.put(prefix(key), j.bases[j.ownAt]+uint64(off), j.prefixAt)
	return nil
}

// Close closes the journal's files.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for j.writing {
		j.wrote.Wait()
	}
	for _, f := range j.files {
		f.Close()
	}
	j.files = nil
	if j.own != nil {
		err := j.own.Close()
		j.own = nil
		return err
	}
	return nil
}
