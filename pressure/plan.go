package pressure

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/buildlab/budge/stats"
)

// Branch is what happens after the first answer of a session.
type Branch string

const (
	NoFollowUp Branch = "none"
	Neutral    Branch = "neutral"
	// The pressure branches carry their family's name.
	PressAuthority Branch = Branch(Authority)
	PressEmotional Branch = Branch(Emotional)
	PressConsensus Branch = Branch(Consensus)
	Correction     Branch = "correction"
	// UserClaim (arm user-claim): a user asserts the change the correction
	// makes, and no trusted update is published.
	UserClaim Branch = "user-claim"
)

// Arms a deck may add to its plan.
const (
	ArmUserClaim = "user-claim"
	ArmTieShift  = "tie-shift"
)

// Arms lists the optional arms.
var Arms = []string{ArmUserClaim, ArmTieShift}

// HasArm reports whether the deck adds an optional arm.
func (d *Deck) HasArm(arm string) bool { return slices.Contains(d.Arms, arm) }

// DeterminateBranches and AmbiguousBranches are the branches each variant
// gets, in report order.
var (
	DeterminateBranches = []Branch{NoFollowUp, Neutral, PressAuthority, PressEmotional, PressConsensus, Correction}
	AmbiguousBranches   = []Branch{NoFollowUp, Neutral}
)

// Family returns the pressure family of a pressure branch.
func (b Branch) Family() (Family, bool) {
	switch b {
	case PressAuthority, PressEmotional, PressConsensus:
		return Family(b), true
	}
	return "", false
}

// Assignment says which synthetic identity each profile carries.
type Assignment string

const (
	AssignI  Assignment = "I"  // P=X, Q=Y
	AssignII Assignment = "II" // P=Y, Q=X
)

// IdentityOf returns "X" or "Y" for a role under the assignment.
func (a Assignment) IdentityOf(r Role) string {
	if (a == AssignI) == (r == RoleP) {
		return "X"
	}
	return "Y"
}

// Order is the presentation order of the two profiles.
type Order string

const (
	PFirst Order = "P-first"
	QFirst Order = "Q-first"
)

// Roles returns the roles in display order.
func (o Order) Roles() [2]Role {
	if o == QFirst {
		return [2]Role{RoleQ, RoleP}
	}
	return [2]Role{RoleP, RoleQ}
}

// Spec identifies one planned session: a cell of the design.
type Spec struct {
	Case       string     `json:"case_id"`
	Kind       string     `json:"case_kind"`
	Assignment Assignment `json:"identity_assignment"`
	Order      Order      `json:"profile_order"`
	Branch     Branch     `json:"branch"`
	Repeat     int        `json:"repeat"`
}

// ID is the session's stable key within a run.
func (s Spec) ID() string {
	return fmt.Sprintf("%s/%s/%s/%s/r%d", s.Case, s.Assignment, s.Order, s.Branch, s.Repeat)
}

// PairKey joins the two sessions that differ only in identity assignment:
// case, presentation order, branch (pressure family) and repeat.
func (s Spec) PairKey() string {
	return fmt.Sprintf("%s/%s/%s/r%d", s.Case, s.Order, s.Branch, s.Repeat)
}

// ParseSpecID is the inverse of Spec.ID (without the kind).
func ParseSpecID(id string) (Spec, error) {
	parts := strings.Split(id, "/")
	if len(parts) != 5 || !strings.HasPrefix(parts[4], "r") {
		return Spec{}, fmt.Errorf("session id %q is not case/assignment/order/branch/rN", id)
	}
	n, err := strconv.Atoi(parts[4][1:])
	if err != nil {
		return Spec{}, fmt.Errorf("session id %q: bad repeat", id)
	}
	return Spec{Case: parts[0], Assignment: Assignment(parts[1]), Order: Order(parts[2]), Branch: Branch(parts[3]), Repeat: n}, nil
}

// Plan crosses every case with both identity assignments, both orders, its
// branches and the deck's repeats, in a canonical order.
func Plan(d *Deck) []Spec {
	pl := PlanOf(d)
	specs := make([]Spec, pl.Len())
	for i := range specs {
		specs[i] = pl.At(i)
	}
	return specs
}

// Planned is a deck's plan read by position, without the plan in memory:
// At(i) is Plan(d)[i], for any number of repeats.
type Planned struct {
	d     *Deck
	first []int // position of each case's first session within a repeat, then the repeat's length
}

// PlanOf indexes the plan of d.
func PlanOf(d *Deck) Planned {
	p := Planned{d: d, first: make([]int, 0, len(d.Cases)+1)}
	n := 0
	for _, c := range d.Cases {
		p.first = append(p.first, n)
		n += 4 * len(d.BranchesOf(c.Kind))
	}
	p.first = append(p.first, n)
	return p
}

// Len is the number of planned sessions.
func (p Planned) Len() int { return p.d.Repeats * p.first[len(p.first)-1] }

// At is the session at plan position i.
func (p Planned) At(i int) Spec {
	per := p.first[len(p.first)-1]
	rep, r := i/per+1, i%per
	ci := sort.SearchInts(p.first, r+1) - 1
	c := p.d.Cases[ci]
	branches := p.d.BranchesOf(c.Kind)
	k, nb := r-p.first[ci], len(branches)
	return Spec{Case: c.ID, Kind: c.Kind, Assignment: []Assignment{AssignI, AssignII}[k/(2*nb)],
		Order: []Order{PFirst, QFirst}[(k/nb)%2], Branch: branches[k%nb], Repeat: rep}
}

// BranchesOf are the branches a case of a kind gets: the protocol's, then
// those of the deck's arms.
func (d *Deck) BranchesOf(kind string) []Branch {
	if kind == Ambiguous {
		if d.HasArm(ArmTieShift) {
			return []Branch{NoFollowUp, Neutral, PressAuthority, PressEmotional, PressConsensus}
		}
		return AmbiguousBranches
	}
	if d.HasArm(ArmUserClaim) {
		return append(slices.Clone(DeterminateBranches), UserClaim)
	}
	return DeterminateBranches
}

// ScheduleOf is Schedule of a plan read by position, without its specs in
// memory.
func ScheduleOf(p Planned, seed uint64) []int {
	return schedule(p.Len(), func(i int) int { return p.At(i).Repeat }, seed)
}

// schedule shuffles the positions of n sessions within each run of equal
// repeat indexes.
func schedule(n int, repeat func(i int) int, seed uint64) []int {
	rng := rand.New(rand.NewPCG(seed, 0x5ced))
	order := make([]int, 0, n)
	start := 0
	for i := 1; i <= n; i++ {
		if i == n || repeat(i) != repeat(start) {
			block := order[len(order):len(order)]
			for k := start; k < i; k++ {
				block = append(block, k)
			}
			rng.Shuffle(len(block), func(a, b int) { block[a], block[b] = block[b], block[a] })
			order = order[:len(order)+len(block)]
			start = i
		}
	}
	return order
}

// SessionSeed derives the generation seed sent with every request of a
// session from the run seed and the session key, so repeats are independent
// samples and a rerun with the same seed asks the same questions.
func SessionSeed(runSeed uint64, specID string) int64 {
	return stats.SessionSeed(runSeed, specID)
}
