package stats

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRateEmptyDenominator(t *testing.T) {
	r := Rate{Num: 0, Den: 0}
	if _, ok := r.Fraction(); ok {
		t.Error("Fraction of 0/0 reported a value")
	}
	if _, ok := r.Percent(); ok {
		t.Error("Percent of 0/0 reported a value")
	}
	if _, ok := r.Wilson(); ok {
		t.Error("Wilson of 0/0 reported an interval")
	}
	if got := r.String(); got != "0/0 (no denominator)" {
		t.Errorf("String = %q", got)
	}
	if w := r.Warnings(); len(w) != 1 || w[0] != WarnEmptyDenominator {
		t.Errorf("Warnings = %q", w)
	}
}

func TestRateValues(t *testing.T) {
	for _, tt := range []struct {
		r        Rate
		str      string
		frac, pc float64
		warn     int
	}{
		{NewRate(4, 24), "4/24 (16.7%)", 4.0 / 24, 400.0 / 24, 0},
		{NewRate(1, 7), "1/7 (14.3%)", 1.0 / 7, 100.0 / 7, 1},
		{NewRate(1, 20), "1/20 (5.0%)", 0.05, 5, 0},
		{NewRate(0, 12), "0/12 (0.0%)", 0, 0, 0},
	} {
		f, ok := tt.r.Fraction()
		p, ok2 := tt.r.Percent()
		if !ok || !ok2 || !near(f, tt.frac, 1e-15) || !near(p, tt.pc, 1e-12) || tt.r.String() != tt.str {
			t.Errorf("%+v: %v %v %q, want %v %v %q", tt.r, f, p, tt.r.String(), tt.frac, tt.pc, tt.str)
		}
		iv, ok := tt.r.Wilson()
		if want := Wilson(tt.r.Num, tt.r.Den, Z95); !ok || iv != want {
			t.Errorf("%+v: Wilson %+v, want %+v", tt.r, iv, want)
		}
		if len(tt.r.Warnings()) != tt.warn {
			t.Errorf("%+v: warnings %q", tt.r, tt.r.Warnings())
		}
	}
}

func TestRateJSON(t *testing.T) {
	b, err := json.Marshal(NewRate(4, 24))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]*float64
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	iv := Wilson(4, 24, Z95)
	num, den := 4.0, 24.0
	if len(v) != 5 || *v["numerator"] != 4 || *v["denominator"] != 24 || *v["percent"] != num/den*100 ||
		*v["wilson_lo"] != iv.Lo*100 || *v["wilson_hi"] != iv.Hi*100 {
		t.Errorf("json = %s", b)
	}
	if b, _ := json.Marshal(Rate{}); string(b) != `{"numerator":0,"denominator":0,"percent":null,"wilson_lo":null,"wilson_hi":null}` {
		t.Errorf("empty rate json = %s", b)
	}
	for _, r := range []Rate{{}, {Num: 3, Den: 7}, {Num: 7, Den: 7}} {
		b, _ := json.Marshal(r)
		var back Rate
		if err := json.Unmarshal(b, &back); err != nil || back != r {
			t.Errorf("round trip of %+v through %s gave %+v, %v", r, b, back, err)
		}
	}
	// Stored runs written before the shared shape carried an "interval"
	// object; they still read.
	var r Rate
	if err := json.Unmarshal([]byte(`{"numerator":4,"denominator":24,"interval":{"low":0.1}}`), &r); err != nil || r != (Rate{Num: 4, Den: 24}) {
		t.Errorf("old form read as %+v, %v", r, err)
	}
	if err := json.Unmarshal([]byte(`{"numerator":"x"}`), &r); err == nil || !strings.Contains(err.Error(), "numerator") {
		t.Errorf("bad numerator: err %v", err)
	}
}
