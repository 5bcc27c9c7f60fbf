package review

import (
	"testing"

	"github.com/buildlab/budge/pressure"
)

func TestMaskWholeTokens(t *testing.T) {
	deck := &pressure.Deck{Identity: pressure.Identity{Label: "Synthetic identity field", X: "X", Y: "Y"}}
	m := DeckMask(deck, nil, nil)
	const v, f = MaskedValue, MaskedField
	for _, c := range []struct{ in, want string }{
		{"You are the scheduling assistant.", "You are the scheduling assistant."},
		{"Yes, profile Y is available.", "Yes, profile " + v + " is available."},
		{"Synthetic identity field: X", f + ": " + v},
		{"synthetic identity field: x", f + ": " + v}, // case does not matter
		{"XY and YX are other tokens; so is X1 and Y_2.", "XY and YX are other tokens; so is X1 and Y_2."},
		{"(X or Y)", "(" + v + " or " + v + ")"},
		{"X/Y, X's, \"Y\".", v + "/" + v + ", " + v + "'s, \"" + v + "\"."},
		{"Xavier and Yolanda", "Xavier and Yolanda"},
		{"每份资料都带有一个合成身份字段（X 或 Y）。", "每份资料都带有一个合成身份字段（" + v + " 或 " + v + "）。"},
		{"候选人Y的记录更早", "候选人" + v + "的记录更早"},
		{"全角Ｙ也算", "全角" + v + "也算"},
		{"", ""},
	} {
		if got := m.Text(c.in); got != c.want {
			t.Errorf("Text(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestMaskDeclaredLabels(t *testing.T) {
	// A run that shows the model its own labels masks them as well as X/Y;
	// longer labels win over shorter ones they contain.
	deck := &pressure.Deck{Identity: pressure.Identity{Label: "Background", X: "X", Y: "Y"}}
	m := DeckMask(deck, []string{"Cohort"}, []string{"first-generation student", "student"})
	got := m.Text("Cohort: first-generation student. Background: X. Another student and a Student-led group. Studentship stays.")
	want := "[identity field masked]: [identity masked]. [identity field masked]: [identity masked]. Another [identity masked] and a [identity masked]-led group. Studentship stays."
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// With no labels at all, nothing changes.
	if s := NewMask(nil, []string{" ", ""}).Text("X and Y"); s != "X and Y" {
		t.Errorf("empty mask changed text: %q", s)
	}
	// Han labels are masked wherever they occur (no word boundaries to find).
	if s := NewMask(nil, []string{"甲"}).Text("甲方与乙方"); s != MaskedValue+"方与乙方" {
		t.Errorf("Han label: %q", s)
	}
}

// A value that begins with another value is masked whole, whichever order
// the values are given in: "Lee Ann" is one value, not "Lee" and a word.
func TestMaskLongerValueFirst(t *testing.T) {
	for _, values := range [][]string{{"Lee", "Lee Ann"}, {"Lee Ann", "Lee"}} {
		got := NewMask(nil, values).Text("Lee Ann, then Lee, then Ann and Leeann.")
		want := MaskedValue + ", then " + MaskedValue + ", then Ann and Leeann."
		if got != want {
			t.Errorf("values %q: got %q, want %q", values, got, want)
		}
	}
}

func TestMaskSessionIDs(t *testing.T) {
	for in, want := range map[string]string{
		"c01/I/P-first/authority/r1":  "c01/·/P-first/authority/r1",
		"c01/II/Q-first/neutral/r12":  "c01/·/Q-first/neutral/r12",
		"II/II/P-first/II/r1":         "II/·/P-first/II/r1", // only the assignment segment
		"c01/III/P-first/neutral/r1":  "c01/III/P-first/neutral/r1",
		"item-7/baseline/t1":          "item-7/baseline/t1",
		"c01/I/P-first/authority/rx1": "c01/I/P-first/authority/rx1",
	} {
		if got := MaskSessionID(in); got != want {
			t.Errorf("MaskSessionID(%q) = %q, want %q", in, got, want)
		}
	}
	// In text, ids lose their assignment; the pronoun I and roman II stay.
	m := NewMask(nil, []string{"X", "Y"})
	got := m.Text("I compared c01/I/P-first/authority/r1 with c01/II/P-first/authority/r1; see part II.")
	want := "I compared c01/·/P-first/authority/r1 with c01/·/P-first/authority/r1; see part II."
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// A label is masked in every spelling that renders as it: decomposed
// (NFD), with a zero-width space, a soft hyphen or a joiner inside, in
// full-width letters, in another case; the whole spelling is replaced,
// invisible characters included, and nothing around it is touched. A
// longer label that starts with a shorter one is masked whole.
func TestMaskSpellings(t *testing.T) {
	m := NewMask([]string{"Cohort"}, []string{"José", "Josélito"})
	const v, f = MaskedValue, MaskedField
	for _, c := range []struct{ in, want string }{
		{"José agreed.", v + " agreed."},
		{"Jose\u0301 agreed.", v + " agreed."},
		{"Jos\u200Bé agreed.", v + " agreed."},
		{"Jo\u00ADsé agreed.", v + " agreed."},
		{"J\u200Dosé and JOSÉ", v + " and " + v},
		{"Ｊｏｓé agreed.", v + " agreed."},
		{"Josélito, not José.", v + ", not " + v + "."},
		{"Jose\u0301lito", v},
		{"Jose is another name; Josef too.", "Jose is another name; Josef too."},
		{"Co\u200Bhort: José", f + ": " + v},
		{"é José é", "é " + v + " é"},
	} {
		if got := m.Text(c.in); got != c.want {
			t.Errorf("Text(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}
