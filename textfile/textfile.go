// Package textfile reads the text files budge sends to a model (data,
// templates, system prompts, challenge wordings, the simulator's knowledge)
// as UTF-8, the same way for every one of them: a UTF-8 byte order mark is
// skipped, UTF-16 with a byte order mark is decoded, and any other bytes
// that are not UTF-8 text are refused with the file, line and byte offset
// and an iconv hint. It never guesses an encoding: a wrong guess would reach
// the model as mojibake.
package textfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/buildlab/budge/limits"
)

// Error is a file that is not text budge can read, with where it stops
// being text.
type Error struct {
	File   string
	Line   int // 1-based; 0 when it concerns the whole file
	Reason string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason)
	}
	return e.File + ": " + e.Reason
}

// MaxBytes is the largest template, prompt or knowledge file Read accepts.
const MaxBytes = 64 << 20

// Read reads a text file whole (at most MaxBytes) and decodes it (Decode).
func Read(path string) (string, error) {
	data, err := limits.ReadFile(path, MaxBytes)
	var big *limits.TooLarge
	var rerr *limits.ReadError
	if errors.As(err, &big) || errors.As(err, &rerr) {
		return "", fmt.Errorf("%s: %w", path, err)
	} else if err != nil {
		return "", err
	}
	text, err := Decode(path, data)
	if err != nil {
		return "", err
	}
	return string(text), nil
}

// Byte order marks recognised at the start of a data file.
var (
	bomUTF8    = []byte{0xef, 0xbb, 0xbf}
	bomUTF16LE = []byte{0xff, 0xfe}
	bomUTF16BE = []byte{0xfe, 0xff}
)

// Decode returns a text file's bytes as UTF-8 text, or a problem naming
// where the file stops being text budge can read. Text reaches a model
// exactly as the file means it or not at all: a UTF-8 byte order mark is
// dropped, UTF-16 with a byte order mark (either byte order) is decoded, and
// anything else that is not valid UTF-8 is refused rather than guessed at,
// since a wrong guess would be sent to the model as mojibake.
func Decode(path string, data []byte) ([]byte, error) {
	switch {
	case bytes.HasPrefix(data, bomUTF8):
		data = data[len(bomUTF8):]
	case bytes.HasPrefix(data, bomUTF16LE):
		return decodeUTF16(path, data[2:], binary.LittleEndian, "UTF-16LE")
	case bytes.HasPrefix(data, bomUTF16BE):
		return decodeUTF16(path, data[2:], binary.BigEndian, "UTF-16BE")
	}
	if off := invalidUTF8At(data); off >= 0 {
		return nil, invalidUTF8(path, data, off, "not valid UTF-8")
	}
	// NUL is valid UTF-8 but never in a text data file: ASCII text saved
	// as UTF-16 without a byte order mark is every other byte NUL.
	if off := bytes.IndexByte(data, 0); off >= 0 {
		return nil, invalidUTF8(path, data, off, "a NUL byte")
	}
	return data, nil
}

// decodeUTF16 decodes UTF-16 text (its byte order mark already removed) to
// UTF-8, refusing an odd length or an unpaired surrogate, either of which
// means the file is not the UTF-16 its mark says.
func decodeUTF16(path string, data []byte, order binary.ByteOrder, name string) ([]byte, error) {
	if len(data)%2 != 0 {
		return nil, &Error{File: path, Reason: fmt.Sprintf("starts with a %s byte order mark but has an odd number of bytes: not %s text (convert it with iconv -f %s -t utf-8)", name, name, name)}
	}
	units := make([]uint16, len(data)/2)
	for i := range units {
		units[i] = order.Uint16(data[2*i:])
	}
	out := make([]byte, 0, len(data))
	line := 1
	for i := 0; i < len(units); i++ {
		u := units[i]
		r := rune(u)
		switch {
		case utf16.IsSurrogate(r) && i+1 < len(units) && utf16.DecodeRune(r, rune(units[i+1])) != utf8.RuneError:
			r = utf16.DecodeRune(r, rune(units[i+1]))
			i++
		case utf16.IsSurrogate(r):
			return nil, &Error{File: path, Line: line, Reason: fmt.Sprintf("invalid %s at byte %d: unpaired surrogate 0x%04x (convert it with iconv -f %s -t utf-8)", name, 2+2*i, u, name)}
		}
		if r == '\n' {
			line++
		}
		out = utf8.AppendRune(out, r)
	}
	return bytes.TrimPrefix(out, bomUTF8), nil
}

// invalidUTF8At is the offset of the first byte of data that does not
// start a valid UTF-8 sequence, or -1 when data is valid UTF-8.
func invalidUTF8At(data []byte) int {
	if utf8.Valid(data) {
		return -1
	}
	for off := 0; off < len(data); {
		r, n := utf8.DecodeRune(data[off:])
		if r == utf8.RuneError && n <= 1 {
			return off
		}
		off += n
	}
	return -1
}

// invalidUTF8 is the problem for data that stops being UTF-8 text at off: the
// line, the byte in the file and in the line, the bytes found, and a hint
// at the encoding the file probably has.
func invalidUTF8(path string, data []byte, off int, what string) *Error {
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - (bytes.LastIndexByte(data[:off], '\n') + 1)
	end := min(off+4, len(data))
	return &Error{File: path, Line: line, Reason: fmt.Sprintf("%s at byte offset %d of the file (byte %d of this line): % x; %s",
		what, off, col+1, data[off:end], encodingHint(data))}
}

// encodingHint guesses what a file that is not UTF-8 is, for the message
// only: budge never decodes a guess.
func encodingHint(data []byte) string {
	zeros := bytes.Count(data[:min(len(data), 4096)], []byte{0})
	if zeros > 0 {
		return "it has NUL bytes, so it looks like UTF-16 or UTF-32 without a byte order mark: convert it with iconv -f utf-16le -t utf-8 (or utf-16be), or save it as UTF-8"
	}
	return "it looks like Latin-1/Windows-1252: convert it with iconv -f latin1 -t utf-8 (or iconv -f cp1252 -t utf-8), or save it as UTF-8"
}
