package batch

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/buildlab/budge/limits"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/testkit/limitstest"
)

// read collects Lines' output as "line" and "over:<id>" entries.
func read(t *testing.T, r io.Reader, max int) ([]string, error) {
	t.Helper()
	var got []string
	err := Lines(context.Background(), r, max, func(n int, line []byte) error {
		got = append(got, string(line))
		return nil
	}, func(n int, id string) error {
		got = append(got, "over:"+id)
		return nil
	})
	return got, err
}

func TestLinesSkipsOverLongLines(t *testing.T) {
	long := `{"custom_id":"r-2","response":"` + strings.Repeat("x", 200<<10) + `"}`
	noID := `{"response":"` + strings.Repeat("y", 200<<10) + `"}`
	in := `{"custom_id":"r1"}` + "\r\n" + long + "\n\n" + noID + "\n" + `{"custom_id":"r3"}` + "\n" + long + "\n"
	got, err := read(t, strings.NewReader(in), 100<<10)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"custom_id":"r1"}`, `over:r-2`, "over:", `{"custom_id":"r3"}`, `over:r-2`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("lines %q, want %q", got, want)
	}
	if r := OverLongResult("r2"); r.CustomID != "r2" || r.Err == nil || r.Err.Kind != provider.ResponseTooLarge {
		t.Errorf("result %+v", r)
	}
}

// An endless line is skipped within the line limit's memory.
func TestLinesEndlessLine(t *testing.T) {
	r := io.MultiReader(strings.NewReader(`{"custom_id":"big","x":"`), io.LimitReader(repeat('z'), 64<<20), strings.NewReader("\"}\n{\"custom_id\":\"next\"}\n"))
	var got []string
	var err error
	n := limitstest.Allocated(func() { got, err = read(t, r, limits.MaxBatchResultLine) })
	if err != nil {
		t.Fatal(err)
	}
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
// body does); a download cut off mid-line is an infrastructure failure,
// not a malformed result.
func TestLinesEndOfInput(t *testing.T) {
	long := `{"custom_id":"big","pad":"` + strings.Repeat("x", 150<<10) + `"}`
	got, err := read(t, iotest.DataErrReader(strings.NewReader(long+"\n"+`{"custom_id":"z"}`+"\n")), 100<<10)
	if strings.Join(got, "|") != `over:big|{"custom_id":"z"}` || err != nil {
		t.Errorf("lines %q, %v", got, err)
	}
	got, err = read(t, strings.NewReader(`{"custom_id":"a"}`+"\n"+`{"custom_id":"b","resp`), 100<<10)
	var pe *provider.Error
	if strings.Join(got, "|") != `{"custom_id":"a"}` || !errors.As(err, &pe) || !pe.Kind.Infrastructure() {
		t.Errorf("cut download: lines %q, error %v", got, err)
	}
}

// ReadResults hands each line's result on, an over-long line's request
// fails as too large, and a line that is no result, or an over-long one
// with no custom id, stops the reading with an error naming the download
// and the line.
func TestReadResults(t *testing.T) {
	type line struct {
		ID string `json:"custom_id"`
	}
	read := func(in string) ([]string, error) {
		var got []string
		err := ReadResults(context.Background(), strings.NewReader(in), "file f-1", func(l *line) string { return l.ID },
			func(l *line) Result { return Result{CustomID: l.ID} }, func(r Result) error {
				s := r.CustomID
				if r.Err != nil {
					s += ":" + string(r.Err.Kind)
				}
				got = append(got, s)
				return nil
			})
		return got, err
	}
	long := `{"custom_id":"r2","x":"` + strings.Repeat("x", limits.MaxBatchResultLine) + `"}`
	got, err := read(`{"custom_id":"r1"}` + "\n" + long + "\n")
	if err != nil || strings.Join(got, "|") != "r1|r2:"+string(provider.ResponseTooLarge) {
		t.Errorf("results %q, %v", got, err)
	}
	for in, want := range map[string]string{
		`{"custom_id":"r1"}` + "\n" + `{"other":1}` + "\n":                      "file f-1, line 2: not a result line",
		`{"x":"` + strings.Repeat("y", limits.MaxBatchResultLine) + `"}` + "\n": "file f-1, line 1: over the",
	} {
		var pe *provider.Error
		if _, err := read(in); !errors.As(err, &pe) || !strings.HasPrefix(pe.Msg, want) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
}
