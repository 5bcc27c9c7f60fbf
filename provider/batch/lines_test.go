package batch

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/buildlab/budge/limits"
	"github.com/buildlab/budge/limits/limitstest"
	"github.com/buildlab/budge/provider"
)

func TestScanLinesSkipsOverLongLines(t *testing.T) {
	long := `{"custom_id":"r\"2","response":"` + strings.Repeat("x", 200<<10) + `"}`
	noID := `{"response":"` + strings.Repeat("y", 200<<10) + `"}`
	in := `{"custom_id":"r1"}` + "\r\n" + long + "\n\n" + noID + "\n" + `{"custom_id":"r3"}` + "\n" + long
	sc := scanLines(strings.NewReader(in), 100<<10)
	var got []string
	for sc.Scan() {
		line := sc.Bytes()
		if id, over := OverLong(line); over {
			got = append(got, "over:"+id)
			if len(line) > headBytes+1 {
				t.Errorf("stand-in of %d bytes", len(line))
			}
			continue
		}
		got = append(got, string(line))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{`{"custom_id":"r1"}`, `over:r"2`, "", "over:", `{"custom_id":"r3"}`, `over:r"2`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("lines %q, want %q", got, want)
	}
	if r := OverLongResult("r2"); r.CustomID != "r2" || r.Err == nil || r.Err.Kind != provider.ResponseTooLarge {
		t.Errorf("result %+v", r)
	}
}

// An endless line is skipped within the line limit's memory.
func TestScanResultsEndlessLine(t *testing.T) {
	r := io.MultiReader(strings.NewReader(`{"custom_id":"big","x":"`), io.LimitReader(repeat('z'), 64<<20), strings.NewReader("\"}\n{\"custom_id\":\"next\"}\n"))
	var got []string
	n := limitstest.Allocated(func() {
		sc := ScanResults(r)
		for sc.Scan() {
			if id, over := OverLong(sc.Bytes()); over {
				got = append(got, "over:"+id)
			} else {
				got = append(got, sc.Text())
			}
		}
		if err := sc.Err(); err != nil {
			t.Error(err)
		}
	})
	if strings.Join(got, "|") != `over:big|{"custom_id":"next"}` {
		t.Errorf("lines %q", got)
	}
	if n > 4*limits.MaxBatchResultLine {
		t.Errorf("reading a 64 MiB line allocated %d MiB", n>>20)
	}
}

type repeat byte

func (b repeat) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// The line after an over-long one is read when it comes with the end of
// the input (a reader that returns its last bytes with io.EOF, as an HTTP
// body does).
func TestScanLinesLineAfterSkipAtEOF(t *testing.T) {
	long := `{"custom_id":"big","pad":"` + strings.Repeat("x", 150<<10) + `"}`
	sc := scanLines(iotest.DataErrReader(strings.NewReader(long+"\n"+`{"custom_id":"z"}`+"\n")), 100<<10)
	var got []string
	for sc.Scan() {
		if id, over := OverLong(sc.Bytes()); over {
			got = append(got, "over:"+id)
		} else {
			got = append(got, sc.Text())
		}
	}
	if strings.Join(got, "|") != `over:big|{"custom_id":"z"}` || sc.Err() != nil {
		t.Errorf("lines %q, %v", got, sc.Err())
	}
}
