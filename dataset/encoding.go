package dataset

import (
	"errors"

	"github.com/buildlab/budge/textfile"
)

// decodeText returns a data file's bytes as UTF-8 text (textfile.Decode,
// the one check every text file budge reads goes through), with a problem
// as a Problem naming file and line.
func decodeText(path string, data []byte) ([]byte, error) {
	text, err := textfile.Decode(path, data)
	var te *textfile.Error
	if errors.As(err, &te) {
		return nil, Problems{{File: te.File, Line: te.Line, Reason: te.Reason}}
	}
	return text, err
}
