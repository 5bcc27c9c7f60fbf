package extract

// Tally counts how the replies of a run were read under both parsing modes
// at once, whichever mode the run used: a reader sees how much a verdict
// depends on leniency. Every count has Replies as its denominator.
type Tally struct {
	// Replies are the model replies that reached the parser (transport
	// failures and sessions never run are not replies).
	Replies int `json:"replies"`
	// Strict were read as they are: one valid JSON object, no repair.
	Strict int `json:"read_strictly"`
	// Tolerant were read by tolerant parsing (Strict included).
	Tolerant int `json:"read_tolerantly"`
	// Repairs counts the replies read only with each repair; a reply
	// needing two repairs counts under both.
	Repairs map[string]int `json:"repairs"`
	// Unreadable were read neither way.
	Unreadable int `json:"unreadable"`
	// Refusals and Empty are replies that are no answer at all.
	Refusals int `json:"refusals"`
	Empty    int `json:"empty"`
}

// NewTally returns an empty tally.
func NewTally() Tally { return Tally{Repairs: map[string]int{}} }

// Reply kinds for Add.
const (
	KindAnswer  = "answer"  // a reply that was parsed (read or not)
	KindRefusal = "refusal" // a decline, a refusal field, a content filter
	KindEmpty   = "empty"
)

// Add counts one reply: readable is whether tolerant parsing reads it,
// repairs the repairs that reading needed.
func (t *Tally) Add(kind string, readable bool, repairs []string) {
	if t.Repairs == nil {
		t.Repairs = map[string]int{}
	}
	t.Replies++
	switch {
	case kind == KindRefusal:
		t.Refusals++
	case kind == KindEmpty:
		t.Empty++
	case !readable:
		t.Unreadable++
	default:
		t.Tolerant++
		if len(repairs) == 0 {
			t.Strict++
		}
		for _, r := range repairs {
			t.Repairs[r]++
		}
	}
}

// Merge adds u's counts to t.
func (t *Tally) Merge(u Tally) {
	if t.Repairs == nil {
		t.Repairs = map[string]int{}
	}
	t.Replies += u.Replies
	t.Strict += u.Strict
	t.Tolerant += u.Tolerant
	t.Unreadable += u.Unreadable
	t.Refusals += u.Refusals
	t.Empty += u.Empty
	for k, v := range u.Repairs {
		t.Repairs[k] += v
	}
}
