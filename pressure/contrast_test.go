package pressure

import (
	"fmt"
	"strings"
	"testing"
)

// A declared contrast replaces what the model sees of the identity field,
// and only that; bad labels are refused with the reason.
func TestWithContrast(t *testing.T) {
	d := mustOpen(t, "discovery")
	e, err := d.WithContrast(Contrast{X: " woman ", Y: "man", Reviewer: "J. Rivera", Field: "Gender"})
	if err != nil {
		t.Fatal(err)
	}
	if e.Identity.X != "woman" || e.Identity.Y != "man" || e.Identity.Label != "Gender" || e.Identity.Reviewer != "J. Rivera" {
		t.Errorf("identity %+v", e.Identity)
	}
	if d.Identity.X != "X" || d.Identity.Label != "Group" {
		t.Errorf("the deck itself changed: %+v", d.Identity)
	}
	if e.Hash != d.Hash {
		t.Error("the deck's hash changed: it identifies the file, the contrast is the run's")
	}
	c := &e.Cases[0]
	msg := RenderCase(e, c, Spec{Case: c.ID, Assignment: AssignII, Order: QFirst})
	idP, idQ := c.ProfileIDs()
	for _, want := range []string{idP + ": " + strings.TrimSpace(c.Profile[RoleP].About) + " Gender: man.", idQ + ": " + strings.TrimSpace(c.Profile[RoleQ].About) + " Gender: woman.", `"Gender" field`} {
		if !strings.Contains(msg, want) {
			t.Errorf("case message lacks %q:\n%s", want, msg)
		}
	}
	if e.Identity.NoIdentityContrast() != "" {
		t.Errorf("a reviewed contrast cannot show an asymmetry: %s", e.Identity.NoIdentityContrast())
	}
	if kept, _ := d.WithContrast(Contrast{X: "woman", Y: "man"}); kept.Identity.NoIdentityContrast() == "" || !strings.Contains(kept.Identity.NoIdentityContrast(), "no reviewer") {
		t.Errorf("the deck's unassigned reviewer stands: %q", kept.Identity.NoIdentityContrast())
	}
	for _, bad := range []struct {
		c    Contrast
		want string
	}{
		{Contrast{X: "woman", Y: ""}, "both labels are required"},
		{Contrast{X: "Woman", Y: "woman"}, "must differ"},
		{Contrast{X: "a: b", Y: "c"}, "colon"},
		{Contrast{X: idP, Y: "c"}, "equals the display name"},
	} {
		if _, err := d.WithContrast(bad.c); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("WithContrast(%+v) = %v, want %q", bad.c, err, bad.want)
		}
	}
}

func TestNoIdentityContrast(t *testing.T) {
	tests := []struct {
		id   Identity
		want string // fragment; "" when the contrast can show an asymmetry
	}{
		{Identity{X: "X", Y: "Y", Reviewer: "J. Rivera"}, "placeholders"},
		{Identity{X: "A", Y: "woman", Reviewer: "J. Rivera"}, "placeholders"},
		{Identity{X: "woman", Y: "man", Reviewer: "unassigned (name one)"}, "no reviewer"},
		{Identity{X: "woman", Y: "man", Reviewer: ""}, "no reviewer"},
		{Identity{X: "女性", Y: "男性", Reviewer: "未指定（请填写）"}, "no reviewer"},
		{Identity{X: "woman", Y: "man", Reviewer: "J. Rivera"}, ""},
		{Identity{X: "女性", Y: "男性", Reviewer: "王老师"}, ""},
	}
	for _, tt := range tests {
		got := tt.id.NoIdentityContrast()
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%+v: %q, want %q", tt.id, got, tt.want)
		}
	}
}

// The answer key gives, for every record id, the displayed id of the
// reference while that record is published.
func TestAnswerKey(t *testing.T) {
	for _, name := range BuiltinDecks() {
		d := mustOpen(t, name)
		key := d.AnswerKey()
		for _, c := range d.Cases {
			want := HumanChoice
			if c.Ref != HumanChoice {
				want = c.Profile[Role(c.Ref)].ID
			}
			for _, r := range c.Records.Records {
				if key[r.ID] != want {
					t.Errorf("%s %s: key[%s] = %q, want %q", name, c.ID, r.ID, key[r.ID], want)
				}
			}
			if c.Update != nil {
				for _, r := range c.Update.Records {
					if key[r.ID] != c.Profile[Role(c.RefAfter)].ID {
						t.Errorf("%s %s: key[%s] = %q after correction", name, c.ID, r.ID, key[r.ID])
					}
				}
			}
		}
	}
}

// Labels that read the same are refused with both spellings shown: a
// decomposed accent, an invisible character, full-width letters.
func TestWithContrastRefusesLabelsThatReadTheSame(t *testing.T) {
	d, err := OpenDeck("discovery")
	if err != nil {
		t.Fatal(err)
	}
	for _, y := range []string{"Jose\u0301", "Jos\u200Bé", "Jo\u00ADsé", "Ｊｏｓé"} {
		_, err := d.WithContrast(Contrast{X: "José", Y: y})
		if err == nil || !strings.Contains(err.Error(), "read the same") || !strings.Contains(err.Error(), fmt.Sprintf("%+q", y)) {
			t.Errorf("labels José and %q: %v", y, err)
		}
	}
	if _, err := d.WithContrast(Contrast{X: "José", Y: "Josefa"}); err != nil {
		t.Errorf("José and Josefa: %v", err)
	}
}
