package batch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"

	"github.com/buildlab/budge/limits"
	"github.com/buildlab/budge/provider"
)

// Lines reads a results download line by line, calling fn with each whole
// line (at most max bytes; a longer one is skipped whole and given to long
// with the custom id read from its start, "" when there is none). A
// download that fails or is cut off mid-stream returns an error of an
// infrastructure kind, after the whole lines before it: the caller reads
// again and skips the results it has.
func Lines(ctx context.Context, r io.Reader, max int, fn func(n int, line []byte) error, long func(n int, customID string) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	for n := 1; ; n++ {
		buf = buf[:0]
		over := false
		whole := false // the line ended with its newline
		var err error
		for {
			var part []byte
			part, err = br.ReadSlice('\n')
			whole = len(part) > 0 && part[len(part)-1] == '\n'
			if !over {
				if len(buf)+len(part) > max {
					// Keep only the line's head, where the custom id is.
					over = true
					if len(buf) >= headBytes {
						buf = buf[:headBytes]
					} else {
						buf = append(buf, part[:min(len(part), headBytes-len(buf))]...)
					}
				} else {
					buf = appendCapped(buf, part, max)
				}
			}
			if err != bufio.ErrBufferFull {
				break
			}
		}
		if err != nil && err != io.EOF {
			return cut(ctx, n, err)
		}
		line := bytes.TrimSpace(buf)
		if len(line) > 0 {
			switch {
			case over:
				if !whole && err == io.EOF {
					return cut(ctx, n, io.ErrUnexpectedEOF)
				}
				if e := long(n, customIDOf(buf)); e != nil {
					return e
				}
			case !whole && !json.Valid(line):
				// The last line ends without its newline and is not
				// whole: a download cut off.
				return cut(ctx, n, io.ErrUnexpectedEOF)
			default:
				if e := fn(n, line); e != nil {
					return e
				}
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// ReadResults reads a results download whose lines are JSON objects of
// type L, each carrying its request's custom id (id reads it), handing fn
// each line's result as result makes it. what names the download in
// errors ("batch results file file-1"): a line that is not such an object
// is malformed; one over limits.MaxBatchResultLine fails its request as
// too large (OverLongResult), or is an error when its start holds no
// custom id.
func ReadResults[L any](ctx context.Context, r io.Reader, what string, id func(*L) string, result func(*L) Result, fn func(Result) error) error {
	return Lines(ctx, r, limits.MaxBatchResultLine, func(n int, raw []byte) error {
		var l L
		if err := json.Unmarshal(raw, &l); err != nil || id(&l) == "" {
			return &provider.Error{Kind: provider.Malformed, Msg: fmt.Sprintf("%s, line %d: not a result line", what, n)}
		}
		return fn(result(&l))
	}, func(n int, cid string) error {
		if cid == "" {
			return &provider.Error{Kind: provider.ResponseTooLarge, Msg: fmt.Sprintf("%s, line %d: over the %.1f MiB line limit, with no custom_id at its start", what, n, float64(limits.MaxBatchResultLine)/(1<<20))}
		}
		return fn(OverLongResult(cid))
	})
}

// headBytes is how much of an over-long line is kept: enough to find its
// custom id, which both providers write before the response.
const headBytes = 4 << 10

// cut classifies a download that stopped at line n.
func cut(ctx context.Context, n int, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return &provider.Error{Kind: provider.ConnReset, Msg: fmt.Sprintf("results download cut off at line %d", n), Err: err}
	}
	pe := provider.ClassifyTransport(ctx, err)
	if !pe.Kind.Infrastructure() && pe.Kind != provider.Canceled {
		pe.Kind = provider.ConnReset
	}
	pe.Msg = fmt.Sprintf("results download failed at line %d: %s", n, pe.Msg)
	return pe
}

var customIDRe = regexp.MustCompile(`"custom_id"\s*:\s*"([A-Za-z0-9_-]{1,64})"`)

func customIDOf(b []byte) string {
	if m := customIDRe.FindSubmatch(b); m != nil {
		return string(m[1])
	}
	return ""
}

// OverLongResult is the result of a request whose line passed the limit:
// its answer failed as too large, as a direct call's would.
func OverLongResult(id string) Result {
	return Result{CustomID: id, Err: &provider.Error{Kind: provider.ResponseTooLarge,
		Msg: fmt.Sprintf("the batch's result line for this request is over the %.1f MiB limit (limits.MaxBatchResultLine); it was not read", float64(limits.MaxBatchResultLine)/(1<<20))}}
}

// appendCapped appends part to buf, growing buf no further than a line of
// max bytes needs (plain append would double past it).
func appendCapped(buf, part []byte, max int) []byte {
	if need := len(buf) + len(part); need > cap(buf) {
		nb := make([]byte, len(buf), min(maxInt(2*cap(buf), need), max))
		copy(nb, buf)
		buf = nb
	}
	return append(buf, part...)
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}
