package framing

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/buildlab/budge/stats"
)

// C1 evaluation modes for mitigations.
const (
	// ModeBaseline takes C1 from the unmitigated baseline and only C2 runs
	// under the mitigation (the paper's choice: it measures the effect on
	// the dialogue condition alone).
	ModeBaseline = "baseline-c1"
	// ModeJoint runs both conditions under the mitigation.
	ModeJoint = "joint"
)

// Unparseable-answer policies.
const (
	// PolicyWrong counts an unparseable answer as a wrong judgment
	// (DialDefer).
	PolicyWrong = "wrong"
	// PolicyExclude drops the item from the paired measures (the
	// predecessor study's choice).
	PolicyExclude = "exclude"
)

// Design is everything about a framing run besides the items: template
// sets and label sets to cross, mitigations, the challenge families, the
// naturalistic roles and the scoring policy. It is stored with the run, so a
// run is re-scored and re-rendered from the store alone.
type Design struct {
	Templates   []*Templates `json:"templates"`
	Labels      []LabelSet   `json:"labels"`
	Mitigations []Mitigation `json:"mitigations,omitempty"`
	Mode        string       `json:"mitigation_mode"`
	Challenges  []Challenge  `json:"challenges,omitempty"`
	// Naturalistic items: by default the second speaker judges the first;
	// Reverse swaps the roles. InvertTruth derives the judgee's ground
	// truth by inverting a label that is about the other speaker.
	Reverse     bool   `json:"reverse_perspective,omitempty"`
	InvertTruth bool   `json:"invert_truth"`
	Policy      string `json:"unparseable_policy"`
	Tolerant    bool   `json:"tolerant_parsing"`
	// FixedC1 is the id of another run whose unmitigated C1 answers on the
	// same items this run's arms are scored against (the paper's Table 5
	// for fine-tuned models: their C2 against the base model's C1). Such a
	// run asks only C2.
	FixedC1 string `json:"fixed_c1_run,omitempty"`
}

// DefaultDesign is budge's own templates, "Speaker 1"/"Speaker 2", no
// mitigation, no challenge, unparseable answers counted wrong, tolerant
// parsing on.
func DefaultDesign() Design {
	return Design{Templates: []*Templates{DefaultTemplates()}, Labels: []LabelSet{DefaultLabels()},
		Mode: ModeBaseline, InvertTruth: true, Policy: PolicyWrong, Tolerant: true}
}

// Validate reports every problem with a design.
func (d *Design) Validate() []string {
	var p []string
	if len(d.Templates) == 0 {
		p = append(p, "templates: at least one set is needed")
	}
	if len(d.Labels) == 0 {
		p = append(p, "labels: at least one set is needed")
	}
	names := map[string]bool{}
	for _, t := range d.Templates {
		if names[t.Name] {
			p = append(p, fmt.Sprintf("templates: two sets are named %q; rename a directory", t.Name))
		}
		names[t.Name] = true
		for _, e := range t.Validate() {
			p = append(p, "templates "+t.Name+": "+e)
		}
	}
	seen := map[string]bool{}
	for _, l := range d.Labels {
		if seen[l.Name] {
			p = append(p, fmt.Sprintf("labels: %q given twice", l.Name))
		}
		seen[l.Name] = true
	}
	seen = map[string]bool{}
	for _, m := range d.Mitigations {
		if seen[m.Name] || m.Name == None {
			p = append(p, fmt.Sprintf("mitigations: %q given twice or reserved", m.Name))
		}
		seen[m.Name] = true
	}
	if d.FixedC1 != "" && d.Mode == ModeJoint {
		p = append(p, fmt.Sprintf("mitigation mode %s runs C1 under each mitigation, but C1 comes from run %s (--baseline-c1): use %s", ModeJoint, d.FixedC1, ModeBaseline))
	}
	if d.Mode != ModeBaseline && d.Mode != ModeJoint {
		p = append(p, fmt.Sprintf("mitigation mode %q: use %s or %s", d.Mode, ModeBaseline, ModeJoint))
	}
	if d.Policy != PolicyWrong && d.Policy != PolicyExclude {
		p = append(p, fmt.Sprintf("unparseable policy %q: use %s or %s", d.Policy, PolicyWrong, PolicyExclude))
	}
	return p
}

// Template returns a template set by name.
func (d *Design) Template(name string) *Templates {
	for _, t := range d.Templates {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// LabelSet returns a label set by name.
func (d *Design) LabelSet(name string) (LabelSet, bool) {
	for _, l := range d.Labels {
		if l.Name == name {
			return l, true
		}
	}
	return LabelSet{}, false
}

// Mitigation returns a mitigation by name; None is the empty mitigation.
func (d *Design) Mitigation(name string) (Mitigation, bool) {
	if name == None || name == "" {
		return Mitigation{Name: None}, true
	}
	for _, m := range d.Mitigations {
		if m.Name == name {
			return m, true
		}
	}
	return Mitigation{}, false
}

// Arm is one cell of the design that gets its own measures: a template set,
// a label set and a mitigation, with the C1 sessions it is compared with.
type Arm struct {
	Template   string `json:"template"`
	Labels     string `json:"labels"`
	Mitigation string `json:"mitigation"`
	// C1Mitigation is the mitigation the C1 answers ran under: none in
	// baseline-c1 mode, the arm's own in joint mode.
	C1Mitigation string `json:"c1_mitigation"`
}

// ModeFixed is the C1 mode of every arm of a run whose C1 comes from
// another run (Design.FixedC1).
const ModeFixed = "fixed-c1"

// Name is a readable, unique name of the arm.
func (a Arm) Name() string { return a.Template + " · " + a.Labels + " · " + a.Mitigation }

// Mode says how the arm's C1 was obtained.
func (a Arm) Mode() string {
	if a.Mitigation == None {
		return "unmitigated"
	}
	if a.C1Mitigation == None {
		return ModeBaseline
	}
	return ModeJoint
}

// Arms lists the design's arms: every template × label set × (none and each
// mitigation).
func (d *Design) Arms() []Arm {
	var out []Arm
	mits := []string{None}
	for _, m := range d.Mitigations {
		mits = append(mits, m.Name)
	}
	for _, t := range d.Templates {
		for _, l := range d.Labels {
			for _, m := range mits {
				c1 := None
				if d.Mode == ModeJoint {
					c1 = m
				}
				out = append(out, Arm{Template: t.Name, Labels: l.Name, Mitigation: m, C1Mitigation: c1})
			}
		}
	}
	return out
}

// Spec is one planned session: an item in one condition of one arm. C1
// sessions have no label set (a statement has no speakers) and are shared
// by every arm with the same template and C1 mitigation.
type Spec struct {
	Item       string    `json:"item"`
	Index      int       `json:"index"` // the item's position in the run's item list
	Domain     string    `json:"domain"`
	Stratum    string    `json:"stratum,omitempty"`
	Condition  Condition `json:"condition"`
	Template   string    `json:"template"`
	Labels     string    `json:"labels,omitempty"`
	Mitigation string    `json:"mitigation"`
	Challenge  string    `json:"challenge,omitempty"`
	// Recorded holds an answer that was imported without its transcript
	// (a released result file that withheld the conversation).
	Recorded *Recorded `json:"recorded,omitempty"`
}

// Recorded is an imported answer that comes without the reply it was read
// from.
type Recorded struct {
	Choice    string `json:"choice"`
	Reasoning string `json:"reasoning,omitempty"`
	Source    string `json:"source"`
}

// ID is the session id: unique within a run and stable across runs.
func (s Spec) ID() string {
	parts := []string{s.Item, s.Template, dash(s.Labels), s.Mitigation, string(s.Condition)}
	if s.Challenge != "" {
		parts = append(parts, s.Challenge)
	}
	return strings.Join(parts, "/")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Stratum is the ground-truth stratum of an item: the label of a
// naturalistic item, empty otherwise.
func Stratum(it *Item) string {
	if it.Dialogue != nil {
		return it.Dialogue.Label
	}
	return ""
}

// Plan lists every session of a run in canonical order: per item, the C1
// sessions of each template (under no mitigation, and under each mitigation
// in joint mode; none when C1 comes from another run), then the C2 sessions of each template × label set ×
// mitigation. With challenge families each session gets one family,
// assigned in rotation over items and conditions so every family meets
// every condition about equally often.
func Plan(d *Design, items []Item) []Spec {
	pl := PlanOf(d, items)
	specs := make([]Spec, pl.Len())
	for i := range specs {
		specs[i] = pl.At(i)
	}
	return specs
}

// Planned is a run's plan read by position, without the plan in memory:
// At(i) is Plan(d, items)[i]. Every item has the same sessions, so an
// item's sessions are the positions [i*PerItem, (i+1)*PerItem).
type Planned struct {
	d      *Design
	items  []Item
	c1Mits []string
	c2Mits []string
}

// PlanOf indexes the plan of items under d.
func PlanOf(d *Design, items []Item) Planned {
	p := Planned{d: d, items: items, c1Mits: []string{None}, c2Mits: []string{None}}
	for _, m := range d.Mitigations {
		p.c2Mits = append(p.c2Mits, m.Name)
		if d.Mode == ModeJoint {
			p.c1Mits = append(p.c1Mits, m.Name)
		}
	}
	if d.FixedC1 != "" {
		p.c1Mits = nil
	}
	return p
}

// PerItem is the number of sessions of one item.
func (p Planned) PerItem() int {
	return len(p.d.Templates) * p.perTemplate()
}

func (p Planned) perTemplate() int { return 2*len(p.c1Mits) + 2*len(p.d.Labels)*len(p.c2Mits) }

// Len is the number of planned sessions.
func (p Planned) Len() int { return len(p.items) * p.PerItem() }

// At is the session at plan position i: per item and template, its C1
// sessions (two a C1 mitigation), then its C2 sessions (two a label set
// and mitigation).
func (p Planned) At(i int) Spec {
	per, perT := p.PerItem(), p.perTemplate()
	idx, r := i/per, i%per
	it := &p.items[idx]
	t, r := p.d.Templates[r/perT], r%perT
	s := Spec{Item: it.ID, Index: idx, Domain: it.Domain, Stratum: Stratum(it), Template: t.Name}
	n := 2 * len(p.c1Mits)
	if r < n {
		ci := r % 2
		s.Condition, s.Mitigation = []Condition{C1True, C1False}[ci], p.c1Mits[r/2]
		s.Challenge = p.d.challengeFor(idx, ci)
		return s
	}
	r -= n
	ci := r % 2
	r /= 2
	s.Condition, s.Labels, s.Mitigation = []Condition{C2Correct, C2Incorrect}[ci], p.d.Labels[r/len(p.c2Mits)].Name, p.c2Mits[r%len(p.c2Mits)]
	s.Challenge = p.d.challengeFor(idx, ci+2)
	return s
}

func (d *Design) challengeFor(item, cond int) string {
	if len(d.Challenges) == 0 {
		return ""
	}
	return d.Challenges[(item+cond)%len(d.Challenges)].Family
}

// SessionSeed derives a session's generation seed from the run seed and the
// session id, so a rerun sends the same seeds.
func SessionSeed(runSeed uint64, id string) int64 {
	return stats.SessionSeed(runSeed, id)
}

// Schedule returns a seeded shuffle of the plan indices: the order sessions
// run in, so that time-of-run effects do not line up with conditions.
func Schedule(n int, seed uint64) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	rng := rand.New(rand.NewPCG(seed, 0x6672616d696e67))
	rng.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
	return order
}
