package framing

import (
	"fmt"
	"slices"
	"strings"
)

// FixedC1 records where a run's C1 answers come from when it asks only C2
// (Design.FixedC1): the other run, its model and fingerprint, and how many
// items were matched by content.
type FixedC1 struct {
	Run         string `json:"run"`
	Model       string `json:"model"`
	Fingerprint string `json:"fingerprint"`
	Items       int    `json:"items_matched"`
	// Sessions is the number of C1 observations taken from the run.
	Sessions int `json:"c1_sessions"`
	// Note says what changed since the run was recorded (its fingerprint),
	// or is empty.
	Note string `json:"note,omitempty"`
}

// Describe is the one-line account of a fixed C1 for reports.
func (f *FixedC1) Describe() string {
	s := fmt.Sprintf("C1 from run %s (model %s, fingerprint %s): %d C1 sessions on %d items matched by content; this run asked only C2 (--baseline-c1)",
		f.Run, f.Model, f.Fingerprint, f.Sessions, f.Items)
	if f.Note != "" {
		s += "; " + f.Note
	}
	return s
}

// Baseline is another run's side of a fixed-C1 pairing: its design, items
// and scored observations.
type Baseline struct {
	Run          string
	Design       *Design
	Items        []Item
	Observations []Observation
}

// C1Pairing matches a run's items with the unmitigated C1 answers of
// another run (base) by content. It is built in three steps, so that the
// other run's sessions can be streamed past it rather than held:
// NewC1Pairing checks the designs and items, Add sees every scored session
// of base with its plan position, and Finish checks that every answer the
// run needs was found. Then For gives, for each of the run's items, the
// plan positions in base of its C1 answers. Memory grows with the items.
type C1Pairing struct {
	run      string
	items    []Item
	template map[string]int // template name -> its index in the run's design
	names    []string
	key      []string // content key of each base item
	slot     map[string]int
	// pos[(t*len(items)+i)*2+c] is the base position of the answer to item
	// i under template t in C1 condition c (−1 until found); rev maps a
	// base position back to the slots it fills.
	pos []int
	rev map[int][]int
}

// NewC1Pairing checks that base can give the C1 answers of a run of items
// under design d. It refuses, naming every difference, when the items
// differ by content, when the template sets, label sets, naturalistic
// roles, parsing or challenge families differ, or when base takes its own C1
// from another run. base.Observations is not read.
func NewC1Pairing(d *Design, items []Item, base Baseline) (*C1Pairing, error) {
	bd := base.Design
	if bd.FixedC1 != "" {
		return nil, fmt.Errorf("run %s has no C1 answers of its own (it takes them from run %s): give that run", base.Run, bd.FixedC1)
	}
	var diffs []string
	if a, b := templateKeys(d), templateKeys(bd); !slices.Equal(a, b) {
		diffs = append(diffs, fmt.Sprintf("template sets: this run %s, run %s %s", strings.Join(a, ", "), base.Run, strings.Join(b, ", ")))
	}
	if a, b := labelKeys(d), labelKeys(bd); !slices.Equal(a, b) {
		diffs = append(diffs, fmt.Sprintf("label sets: this run %s, run %s %s", strings.Join(a, ", "), base.Run, strings.Join(b, ", ")))
	}
	if d.Reverse != bd.Reverse || d.InvertTruth != bd.InvertTruth {
		diffs = append(diffs, fmt.Sprintf("naturalistic roles: this run %q, run %s %q", d.Perspective(), base.Run, bd.Perspective()))
	}
	if d.Tolerant != bd.Tolerant {
		diffs = append(diffs, fmt.Sprintf("parsing: this run tolerant=%v, run %s tolerant=%v (--strict-parse)", d.Tolerant, base.Run, bd.Tolerant))
	}
	if a, b := challengeKeys(d), challengeKeys(bd); !slices.Equal(a, b) {
		diffs = append(diffs, fmt.Sprintf("challenge families: this run [%s], run %s [%s]", strings.Join(a, ", "), base.Run, strings.Join(b, ", ")))
	}
	p := &C1Pairing{run: base.Run, items: items, template: map[string]int{}, slot: map[string]int{}, rev: map[int][]int{}}
	at := map[string]int{}
	p.key = make([]string, len(base.Items))
	for i := range base.Items {
		p.key[i] = ContentKey(base.Items[i])
		at[p.key[i]] = i
	}
	mine := map[string]bool{}
	var notInBase []string
	for i := range items {
		k := ContentKey(items[i])
		mine[k] = true
		if _, ok := at[k]; !ok {
			notInBase = append(notInBase, items[i].ID)
		}
	}
	var notHere []string
	for i := range base.Items {
		if !mine[p.key[i]] {
			notHere = append(notHere, base.Items[i].ID)
		}
	}
	if len(notInBase) > 0 || len(notHere) > 0 {
		diffs = append(diffs, fmt.Sprintf("items (matched by content): %d of this run's %d are not in run %s%s, and %d of its %d are not in this run%s",
			len(notInBase), len(items), base.Run, eg(notInBase), len(notHere), len(base.Items), eg(notHere)))
	}
	if len(diffs) > 0 {
		return nil, fmt.Errorf("run %s cannot give this run's C1: %s", base.Run, strings.Join(diffs, "; "))
	}
	for t, tm := range d.Templates {
		p.template[tm.Name] = t
		p.names = append(p.names, tm.Name)
	}
	// The run's slots by template, content and condition: items with the
	// same content share their base answer.
	p.pos = make([]int, 2*len(items)*len(d.Templates))
	for t := range d.Templates {
		for i := range items {
			k := ContentKey(items[i])
			for c := 0; c < 2; c++ {
				p.pos[(t*len(items)+i)*2+c] = -1
				p.slot[slotKey(t, k, c)] = -1
			}
		}
	}
	return p, nil
}

func slotKey(template int, content string, cond int) string {
	return fmt.Sprintf("%d/%d/%s", template, cond, content)
}

// Add sees the scored session of base at its plan position pos: an
// unmitigated C1 answer on an item the run shares becomes the answer of
// the run's items with its content (the last one seen, should base ask
// the same content twice).
func (p *C1Pairing) Add(pos int, o *Observation) {
	if o.Condition.Dialogue() || o.Mitigation != None || o.Index < 0 || o.Index >= len(p.key) || o.Status == StatusMissing {
		return
	}
	t, ok := p.template[o.Template]
	if !ok {
		return
	}
	k := slotKey(t, p.key[o.Index], condIndex(o.Condition))
	if _, ok := p.slot[k]; ok {
		p.slot[k] = pos
	}
}

// Finish fills every slot of the run from what Add saw, or says how many
// C1 answers base lacks (an unfinished run, or one that ran no C1).
func (p *C1Pairing) Finish() error {
	var lacking []string
	for t, name := range p.names {
		for i := range p.items {
			it := &p.items[i]
			k := ContentKey(*it)
			for c, cond := range []Condition{C1True, C1False} {
				pos := p.slot[slotKey(t, k, c)]
				if pos < 0 {
					lacking = append(lacking, it.ID+"/"+name+"/"+string(cond))
					continue
				}
				s := (t*len(p.items)+i)*2 + c
				p.pos[s] = pos
				p.rev[pos] = append(p.rev[pos], s)
			}
		}
	}
	p.slot = nil
	if len(lacking) > 0 {
		return fmt.Errorf("run %s lacks %d of the %d unmitigated C1 answers this run needs%s: it is unfinished or ran no C1; finish it first (--resume %s)",
			p.run, len(lacking), len(p.pos), eg(lacking), p.run)
	}
	return nil
}

// Len is the number of C1 answers the run takes from base.
func (p *C1Pairing) Len() int { return len(p.pos) }

// For is the plan positions in base of item's C1 answers, by template and
// then condition (C1-True, C1-False).
func (p *C1Pairing) For(item int) []int {
	out := make([]int, 0, 2*len(p.names))
	for t := range p.names {
		s := (t*len(p.items) + item) * 2
		out = append(out, p.pos[s], p.pos[s+1])
	}
	return out
}

// Items is the run's items that base's session at pos answers for, in
// order (none for a session the run does not use).
func (p *C1Pairing) Items(pos int) []int {
	var out []int
	for _, s := range p.rev[pos] {
		out = append(out, (s/2)%len(p.items))
	}
	return out
}

// Reindex makes an observation of base one of the run's, on its item.
func (p *C1Pairing) Reindex(o *Observation, item int) {
	it := &p.items[item]
	o.Index, o.Item, o.Domain, o.Stratum = item, it.ID, it.Domain, Stratum(it)
}

func eg(ids []string) string {
	switch {
	case len(ids) == 0:
		return ""
	case len(ids) > 3:
		return " (e.g. " + strings.Join(ids[:3], ", ") + ")"
	}
	return " (" + strings.Join(ids, ", ") + ")"
}

// templateKeys names each template set with a hash of its text, sorted.
func templateKeys(d *Design) []string {
	var out []string
	for _, t := range d.Templates {
		out = append(out, fmt.Sprintf("%s (sha256 %s)", t.Name, t.Hash()[:12]))
	}
	slices.Sort(out)
	return out
}

func labelKeys(d *Design) []string {
	var out []string
	for _, l := range d.Labels {
		out = append(out, l.Name+" ("+l.Speaker1+" / "+l.Speaker2+")")
	}
	slices.Sort(out)
	return out
}

func challengeKeys(d *Design) []string {
	var out []string
	for _, c := range d.Challenges {
		out = append(out, c.Family)
	}
	slices.Sort(out)
	return out
}
