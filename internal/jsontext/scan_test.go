package jsontext

import (
	"encoding/json"
	"testing"
)

// ScanString and ScanNumber accept a token exactly when encoding/json
// takes it for a valid string or number, and end just past it.
func TestScanAsValid(t *testing.T) {
	for _, tc := range []struct {
		tok  string
		scan func([]byte, int) (int, bool)
	}{
		{`"plain"`, ScanString}, {`""`, ScanString}, {`"a\"b\\c\/d\b\f\n\r\t"`, ScanString},
		{`"\u00e9\uD83D"`, ScanString}, {`"é"`, ScanString}, {`"\u00g0"`, ScanString},
		{`"\x"`, ScanString}, {"\"a\nb\"", ScanString}, {`"open`, ScanString}, {`"\`, ScanString}, {`"\u12"`, ScanString},
		{`0`, ScanNumber}, {`-0`, ScanNumber}, {`12.5e-3`, ScanNumber}, {`1E+9`, ScanNumber}, {`-`, ScanNumber},
		{`01`, ScanNumber}, {`1.`, ScanNumber}, {`1e`, ScanNumber}, {`.5`, ScanNumber}, {`1.5E`, ScanNumber},
	} {
		b := []byte(tc.tok + ",")
		end, ok := tc.scan(b, 0)
		if want := json.Valid([]byte(tc.tok)); ok != want {
			t.Errorf("%s: ok %v, encoding/json says %v", tc.tok, ok, want)
		}
		if ok && end != len(tc.tok) {
			t.Errorf("%s: ends at %d, want %d", tc.tok, end, len(tc.tok))
		}
	}
}
