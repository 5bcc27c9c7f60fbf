package batch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"

	"github.com/buildlab/budge/limits"
	"github.com/buildlab/budge/provider"
)

// headBytes is how much of an over-long line is kept: enough to find its
// custom id, which both providers write before the response.
const headBytes = 4 << 10

// ScanResults returns a scanner over the lines of a batch's results, none
// longer than limits.MaxBatchResultLine held: a longer line is one
// request's oversized answer, not the whole file's fault, so the scanner
// yields a stand-in for it (OverLong tells it apart and gives its custom
// id) and skips the rest of it unread into memory.
func ScanResults(r io.Reader) *bufio.Scanner {
	return scanLines(r, limits.MaxBatchResultLine)
}

func scanLines(r io.Reader, max int) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), max+1)
	skipping := false
	var split bufio.SplitFunc
	split = func(data []byte, atEOF bool) (int, []byte, error) {
		i := bytes.IndexByte(data, '\n')
		switch {
		case skipping && i >= 0:
			// The rest of a skipped line, and the next line with it: a
			// Scanner at the end of its input stops at a call that
			// yields no line.
			skipping = false
			n, tok, err := split(data[i+1:], atEOF)
			return i + 1 + n, tok, err
		case skipping:
			return len(data), nil, nil
		case i > max || (i < 0 && len(data) > max):
			// A line over the limit: its head stands in for it.
			head := append([]byte{0}, data[:headBytes]...)
			if i >= 0 {
				return i + 1, head, nil
			}
			skipping = true
			return len(data), head, nil
		case i >= 0:
			return i + 1, bytes.TrimSuffix(data[:i], []byte("\r")), nil
		case atEOF && len(data) > 0:
			return len(data), data, nil
		}
		return 0, nil, nil
	}
	sc.Split(split)
	return sc
}

var customIDField = regexp.MustCompile(`"custom_id"\s*:\s*"((?:[^"\\]|\\.)*)"`)

// OverLong reports whether line, from ScanResults, stands in for a line
// over the limit, and the custom id its start names ("" when it names
// none: the file is not a results file).
func OverLong(line []byte) (id string, over bool) {
	if len(line) == 0 || line[0] != 0 {
		return "", false
	}
	if m := customIDField.FindSubmatch(line); m != nil {
		var id string
		if json.Unmarshal(append(append([]byte{'"'}, m[1]...), '"'), &id) == nil {
			return id, true
		}
	}
	return "", true
}

// OverLongResult is the result of a request whose line passed the limit:
// its answer failed as too large, as a direct call's would.
func OverLongResult(id string) Result {
	return Result{CustomID: id, Err: &provider.Error{Kind: provider.ResponseTooLarge,
		Msg: fmt.Sprintf("the batch's result line for this request is over the %.1f MiB limit (limits.MaxBatchResultLine); it was not read", float64(limits.MaxBatchResultLine)/(1<<20))}}
}
