package judge

import (
	"fmt"
	"math"

	"github.com/buildlab/budge/stats"
)

// Thresholds under which the audit warns. Kappa below 0.6 is under the
// lower bound of "substantial" agreement on Landis and Koch's scale: the
// judge's codes should not stand in for a human reviewer's there. Order-swap
// agreement and repeat stability below 80% mean the judge's code depends on
// how (or when) it was asked more than one time in five.
const (
	LowKappa     = 0.6
	LowStability = 0.8
)

// Judgment is one judge call's code: task, presentation order and repeat.
type Judgment struct {
	Task    string `json:"task"`
	Session string `json:"session_id"` // the judge's own session
	Order   int    `json:"order"`
	Repeat  int    `json:"repeat"`
	Code    string `json:"code,omitempty"`
	// Codes are every applicable code the judge named, the primary (Code)
	// first; nil when it named only the primary.
	Codes   []string `json:"codes,omitempty"`
	Status  string   `json:"status"`
	Problem string   `json:"problem,omitempty"`
}

// Rater is a human rater's codes by task id.
type Rater struct {
	Name  string
	Codes map[string]string
}

// TaskCode is a task's primary code: the code most of its read judgments
// gave (ties go to the code listed first in the codebook), with its votes.
type TaskCode struct {
	Task  string     `json:"task"`
	Group string     `json:"group"`
	Code  string     `json:"code"` // "" when no judgment was read
	Votes stats.Rate `json:"votes"`
	All   []string   `json:"all"` // every judgment's code, by order then repeat ("" unread)
}

// CodeCount is how many tasks got a code as their primary code, by group.
type CodeCount struct {
	Code    string         `json:"code"`
	Total   int            `json:"total"`
	ByGroup map[string]int `json:"by_group"`
}

// Agreement is the judge's agreement with one human rater over the tasks
// both coded: the share of the same code and Cohen's kappa with its 95%
// large-sample interval (null when undefined).
type Agreement struct {
	Rater    string     `json:"rater"`
	Same     stats.Rate `json:"same_code"`
	Kappa    *float64   `json:"kappa"`
	KappaLo  *float64   `json:"kappa_lo"`
	KappaHi  *float64   `json:"kappa_hi"`
	Excluded int        `json:"excluded"` // tasks the rater coded outside the codebook, or the judge could not code
	Warning  string     `json:"warning,omitempty"`
}

// Audit is what budge reports of a judge's codes.
type Audit struct {
	Kind     string `json:"kind"`
	Codebook string `json:"codebook"`
	Tasks    int    `json:"tasks"`
	Repeats  int    `json:"repeats"`
	// Calls counts every judgment; Read, Repaired, Unreadable and Failed
	// split it by how the answer was read.
	Calls      int `json:"calls"`
	Read       int `json:"read"`
	Repaired   int `json:"repaired"`
	Unreadable int `json:"unreadable"`
	Failed     int `json:"failed"`
	// Coded counts the tasks that have a primary code.
	Coded  stats.Rate  `json:"coded"`
	Counts []CodeCount `json:"counts"`
	// Applicable counts, per code, the read judgments that named it as a
	// further applicable code beside their primary one (ALSO: line).
	Applicable map[string]int `json:"further_applicable_codes"`
	// OrderSwap counts, over tasks and repeats judged in both orders with
	// both answers read, those where both orders gave the same code.
	OrderSwap stats.Rate `json:"order_swap_agreement"`
	// Stability counts, over tasks and orders with at least two read
	// repeats, those where every repeat gave the same code.
	Stability stats.Rate  `json:"repeat_stability"`
	Agreement []Agreement `json:"agreement"`
	PerTask   []TaskCode  `json:"per_task"`
	Warnings  []string    `json:"warnings"`
}

// Measure audits the judgments of tasks coded with cb, against the human
// raters given (none when the run has no finished review).
func Measure(cb Codebook, kind string, tasks []Task, repeats int, js []Judgment, raters []Rater) Audit {
	a := Audit{Kind: kind, Codebook: cb.Name, Tasks: len(tasks), Repeats: repeats, Calls: len(js), Warnings: []string{}, Agreement: []Agreement{}}
	type key struct{ order, repeat int }
	by := map[string]map[key]string{}
	a.Applicable = map[string]int{}
	for _, j := range js {
		for _, c := range j.Codes[min(1, len(j.Codes)):] {
			a.Applicable[c]++
		}
		switch j.Status {
		case StatusRead:
			a.Read++
		case StatusRepaired:
			a.Repaired++
		case StatusUnreadable:
			a.Unreadable++
		default:
			a.Failed++
		}
		if by[j.Task] == nil {
			by[j.Task] = map[key]string{}
		}
		by[j.Task][key{j.Order, j.Repeat}] = j.Code
	}
	rank := map[string]int{}
	for i, n := range cb.Names() {
		rank[n] = i
	}
	counts := map[string]*CodeCount{}
	primary := map[string]string{}
	for _, t := range tasks {
		tc := TaskCode{Task: t.ID, Group: t.Group, All: []string{}}
		votes := map[string]int{}
		read := 0
		for o := range t.Orders() {
			var seen []string
			for r := range repeats {
				c := by[t.ID][key{o, r}]
				tc.All = append(tc.All, c)
				if c != "" {
					votes[c]++
					read++
					seen = append(seen, c)
				}
			}
			if len(seen) >= 2 {
				a.Stability.Den++
				if allSame(seen) {
					a.Stability.Num++
				}
			}
		}
		if t.Orders() == 2 {
			for r := range repeats {
				c0, c1 := by[t.ID][key{0, r}], by[t.ID][key{1, r}]
				if c0 != "" && c1 != "" {
					a.OrderSwap.Den++
					if c0 == c1 {
						a.OrderSwap.Num++
					}
				}
			}
		}
		for c, n := range votes {
			if n > votes[tc.Code] || (n == votes[tc.Code] && (tc.Code == "" || rank[c] < rank[tc.Code])) {
				tc.Code = c
			}
		}
		tc.Votes = stats.NewRate(votes[tc.Code], read)
		a.Coded.Den++
		if tc.Code != "" {
			a.Coded.Num++
			primary[t.ID] = tc.Code
		}
		name := tc.Code
		if name == "" {
			name = "(no code)"
		}
		cc := counts[name]
		if cc == nil {
			cc = &CodeCount{Code: name, ByGroup: map[string]int{}}
			counts[name] = cc
		}
		cc.Total++
		cc.ByGroup[t.Group]++
		a.PerTask = append(a.PerTask, tc)
	}
	for _, n := range append(cb.Names(), "(no code)") {
		if cc := counts[n]; cc != nil {
			a.Counts = append(a.Counts, *cc)
		}
	}
	for _, r := range raters {
		a.Agreement = append(a.Agreement, agree(cb, tasks, primary, r))
	}
	a.Warnings = a.warn()
	return a
}

func allSame(s []string) bool {
	for _, c := range s[1:] {
		if c != s[0] {
			return false
		}
	}
	return true
}

// agree is the judge's primary codes against one rater's.
func agree(cb Codebook, tasks []Task, primary map[string]string, r Rater) Agreement {
	ag := Agreement{Rater: r.Name}
	idx := map[string]int{}
	for i, n := range cb.Names() {
		idx[n] = i
	}
	table := make([][]int, len(idx))
	for i := range table {
		table[i] = make([]int, len(idx))
	}
	for _, t := range tasks {
		hc, ok := r.Codes[t.ID]
		if !ok {
			continue
		}
		jc := primary[t.ID]
		hi, okH := idx[hc]
		ji, okJ := idx[jc]
		if !okH || !okJ {
			ag.Excluded++
			continue
		}
		table[ji][hi]++
		ag.Same.Den++
		if hi == ji {
			ag.Same.Num++
		}
	}
	k := stats.CohenKappa(table, stats.Z95)
	if !math.IsNaN(k.Value) {
		v, lo, hi := k.Value, k.CI.Lo, k.CI.Hi
		ag.Kappa, ag.KappaLo, ag.KappaHi = &v, &lo, &hi
	}
	switch {
	case ag.Kappa == nil:
		ag.Warning = fmt.Sprintf("kappa with %s is undefined over %d tasks: the judge cannot be checked against this reviewer", r.Name, ag.Same.Den)
	case *ag.Kappa < LowKappa:
		ag.Warning = fmt.Sprintf("low agreement: kappa %.2f with %s is below %.1f; do not use the judge's codes in place of a reviewer's", *ag.Kappa, r.Name, LowKappa)
	}
	return ag
}

func (a Audit) warn() []string {
	w := []string{}
	if n := a.Unreadable + a.Failed; n > 0 {
		w = append(w, fmt.Sprintf("%d of %d judgments have no code (%d unreadable, %d failed)", n, a.Calls, a.Unreadable, a.Failed))
	}
	if f, ok := a.OrderSwap.Fraction(); ok && f < LowStability {
		w = append(w, fmt.Sprintf("order-swap agreement %s is below %.0f%%: the judge's code depends on which text it reads first", a.OrderSwap, LowStability*100))
	}
	if f, ok := a.Stability.Fraction(); ok && f < LowStability {
		w = append(w, fmt.Sprintf("repeat stability %s is below %.0f%%: asked again, the judge often codes differently", a.Stability, LowStability*100))
	}
	if a.Repeats < 2 {
		w = append(w, "one repeat: repeat stability is not measured (use --repeats 2 or more)")
	}
	for _, ag := range a.Agreement {
		if ag.Warning != "" {
			w = append(w, ag.Warning)
		}
	}
	return w
}
