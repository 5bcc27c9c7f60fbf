package pressure

import (
	"fmt"

	"github.com/buildlab/budge/limits"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/token"
)

// Limits on a deck file. A deck is a few kilobytes (the built-in decks are
// under 20 KB and 1,600 YAML tokens); these limits are far above any deck a
// person writes and keep the memory that reading a hostile file costs under
// about 200 MB: the YAML library spends a few hundred bytes per token (and
// reads a deck twice), more per nesting level, and expands every alias in
// full.
const (
	// MaxDeckBytes is the largest deck file read, in bytes.
	MaxDeckBytes = 1 << 20
	// MaxDeckTokens bounds the YAML tokens of a deck file (scalars, keys
	// and punctuation), estimated from its indicator characters and lines
	// before the YAML library reads it. The built-in decks have about 1,500.
	MaxDeckTokens = 50_000
	// MaxDeckDepth is the deepest nesting of YAML collections (mappings and
	// sequences, block or flow) in a deck file. The deck format needs 7
	// (cases, a case, its evidence, records, a record, its sessions).
	MaxDeckDepth = 64
	// MaxDeckNodes bounds the YAML nodes of a deck once every alias is
	// expanded (an alias counts as all the nodes it repeats), so a few
	// hundred bytes of nested aliases ("billion laughs") cannot expand to
	// gigabytes. The scalar text after expansion is bounded by MaxDeckBytes.
	// A deck without aliases has fewer nodes than tokens.
	MaxDeckNodes = MaxDeckTokens
	// MaxRepeats is the largest repeats a deck may ask for.
	MaxRepeats = 1000
	// MaxPlannedSessions bounds the sessions a deck plans: every case
	// crossed with 2 identity assignments, 2 orders, its branches (6 for a
	// determinate case, 2 for an ambiguous one) and the repeats.
	MaxPlannedSessions = 1_000_000
)

// readDeckFile reads a deck file, refusing one larger than MaxDeckBytes
// before reading it whole.
func readDeckFile(path string) ([]byte, error) {
	data, err := limits.ReadFile(path, MaxDeckBytes)
	if big, ok := err.(*limits.TooLarge); ok {
		return nil, Problems{tooLarge(path, big.Size)}
	}
	if err != nil {
		return nil, fmt.Errorf("reading deck: %w", err)
	}
	return data, nil
}

func tooLarge(file string, size int64) Problem {
	is := "more than " + bytesText(MaxDeckBytes)
	if size >= 0 {
		is = fmt.Sprintf("%d bytes", size)
	}
	return Problem{File: file, Msg: fmt.Sprintf("the file is %s: a deck file may be at most %s (MaxDeckBytes); a deck is a few kilobytes", is, bytesText(MaxDeckBytes))}
}

func bytesText(n int) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// scanDeckLimits checks the size, the token count and the nesting depth of a
// deck file and returns its tokens, or the problem that refuses it. The
// tokens are estimated from the bytes first, so that a file dense with
// punctuation is refused before the YAML library spends memory on it.
func scanDeckLimits(file string, data []byte) (token.Tokens, *Problem) {
	if len(data) > MaxDeckBytes {
		p := tooLarge(file, int64(len(data)))
		return nil, &p
	}
	if p := estimateTokens(file, data); p != nil {
		return nil, p
	}
	tokens := lexer.Tokenize(string(data))
	if p := checkDepth(file, tokens); p != nil {
		return nil, p
	}
	return tokens, nil
}

// estimateTokens bounds the number of YAML tokens from above and refuses a
// file over MaxDeckTokens. Every token but a scalar starts with an indicator
// character, and scalars are separated by indicators or line breaks, so
// counting both bounds the tokens (to within a factor of two) while prose
// costs only its lines and punctuation. It also follows the nesting of
// brackets, which may be in quoted text, so that nesting only names the
// reason for a refusal and never refuses by itself.
func estimateTokens(file string, data []byte) *Problem {
	n, line := 0, 1
	depth, deepLine := 0, 0
	for _, c := range data {
		switch c {
		case '\n':
			line++
			n++
		case '[', '{':
			depth++
			if depth > MaxDeckDepth && deepLine == 0 {
				deepLine = line
			}
			n++
		case ']', '}':
			depth = max(depth-1, 0)
			n++
		case ',', ':', '-', '?', '&', '*', '!', '|', '>', '#', '\'', '"', '%', '@', '`':
			n++
		default:
			continue
		}
		if n > MaxDeckTokens {
			if deepLine > 0 {
				return &Problem{File: file, Line: deepLine, Msg: depthMsg()}
			}
			return &Problem{File: file, Line: line, Msg: fmt.Sprintf("the file has more than %d YAML tokens (MaxDeckTokens), the limit for a deck file; a deck has a few thousand", MaxDeckTokens)}
		}
	}
	return nil
}

func depthMsg() string {
	return fmt.Sprintf("YAML nested more than %d levels deep (MaxDeckDepth), the limit for a deck file", MaxDeckDepth)
}

// checkDepth refuses tokens nested more than MaxDeckDepth levels deep.
func checkDepth(file string, tokens token.Tokens) *Problem {
	if _, line := nesting(tokens, MaxDeckDepth); line > 0 {
		return &Problem{File: file, Line: line, Msg: depthMsg()}
	}
	return nil
}

// nesting measures the nesting of the YAML collections: flow collections by
// their brackets, block collections by the columns at which their entries
// (sequence dashes and mapping keys) start. It returns the deepest nesting
// seen and, when that passes limit, the line where it first does (and stops
// there).
func nesting(tokens token.Tokens, limit int) (deepest, line int) {
	var block []int // columns of the open block collections, increasing
	flow := 0
	for i, tk := range tokens {
		if tk.Position == nil {
			continue
		}
		switch tk.Type {
		case token.SequenceStartType, token.MappingStartType:
			flow++
		case token.SequenceEndType, token.MappingEndType:
			flow = max(flow-1, 0)
		}
		if flow == 0 {
			entry := tk.Type == token.SequenceEntryType || tk.Type == token.MappingKeyType ||
				i+1 < len(tokens) && tokens[i+1].Type == token.MappingValueType
			if entry {
				col := tk.Position.Column
				for len(block) > 0 && block[len(block)-1] > col {
					block = block[:len(block)-1]
				}
				if len(block) == 0 || block[len(block)-1] < col {
					block = append(block, col)
				}
			}
		}
		deepest = max(deepest, len(block)+flow)
		if deepest > limit {
			return deepest, tk.Position.Line
		}
	}
	return deepest, 0
}

// checkExpansion counts the nodes and the scalar bytes of a parsed deck
// file with every alias expanded, and refuses a deck over MaxDeckNodes nodes
// or MaxDeckBytes bytes, at the line of the alias that crosses the limit.
func checkExpansion(file string, f *ast.File) *Problem {
	x := expansion{anchors: map[string]size{}}
	for _, doc := range f.Docs {
		clear(x.anchors) // an alias names an anchor of its own document
		x.count(doc)
	}
	return x.prob.withFile(file)
}

type size struct{ nodes, bytes int }

func (s size) over() bool { return s.nodes > MaxDeckNodes || s.bytes > MaxDeckBytes }

// add sums two sizes, saturating just over the limits.
func (s size) add(o size) size {
	return size{min(s.nodes+o.nodes, MaxDeckNodes+1), min(s.bytes+o.bytes, MaxDeckBytes+1)}
}

type expansion struct {
	anchors map[string]size
	total   size
	prob    *Problem
}

func (p *Problem) withFile(file string) *Problem {
	if p != nil {
		p.File = file
	}
	return p
}

// count returns the expanded size of n and adds it to the total; it stops
// at the first alias that takes the total over a limit.
func (x *expansion) count(n ast.Node) size {
	if n == nil || x.prob != nil {
		return size{}
	}
	var s size
	grow := func(o size) {
		s = s.add(o)
		x.total = x.total.add(o)
	}
	switch v := n.(type) {
	case *ast.AliasNode:
		name := ""
		if v.Value != nil {
			name = v.Value.GetToken().Value
		}
		a, ok := x.anchors[name]
		if !ok {
			a = size{nodes: 1}
		}
		grow(a)
		if x.total.over() {
			line := 0
			if tk := v.GetToken(); tk != nil && tk.Position != nil {
				line = tk.Position.Line
			}
			x.prob = &Problem{Line: line, Msg: fmt.Sprintf("aliases expand the deck to more than %d YAML nodes (MaxDeckNodes) or %s of text (MaxDeckBytes), the limits for a deck; write the deck without nested aliases", MaxDeckNodes, bytesText(MaxDeckBytes))}
		}
		return s
	case *ast.AnchorNode:
		s = x.count(v.Value)
		if v.Name != nil {
			x.anchors[v.Name.GetToken().Value] = s
		}
		return s
	case *ast.DocumentNode:
		return x.count(v.Body)
	case *ast.TagNode:
		return x.count(v.Value)
	case *ast.MappingKeyNode:
		return x.count(v.Value)
	case *ast.MappingValueNode:
		s = x.count(v.Key).add(x.count(v.Value))
		return s
	case *ast.MappingNode:
		grow(size{nodes: 1})
		for _, mv := range v.Values {
			s = s.add(x.count(mv))
		}
		return s
	case *ast.SequenceNode:
		grow(size{nodes: 1})
		for _, e := range v.Values {
			s = s.add(x.count(e))
		}
		return s
	case *ast.CommentGroupNode:
		return s
	}
	bytes := 0
	if tk := n.GetToken(); tk != nil {
		bytes = len(tk.Value)
	}
	grow(size{nodes: 1, bytes: bytes})
	return s
}

// checkPlanSize refuses repeats over MaxRepeats and a plan of more than
// MaxPlannedSessions sessions, before anything plans them.
func checkPlanSize(d *Deck) *Problem {
	at := Problem{File: d.Path, Line: d.Line("$.repeats"), Field: "repeats"}
	if d.Repeats > MaxRepeats {
		at.Msg = fmt.Sprintf("is %d, more than %d (MaxRepeats), the limit for a deck", d.Repeats, MaxRepeats)
		return &at
	}
	perRepeat := 0
	for _, c := range d.Cases {
		perRepeat += 2 * 2 * len(d.BranchesOf(c.Kind))
	}
	if n := perRepeat * max(d.Repeats, 0); n > MaxPlannedSessions {
		at.Msg = fmt.Sprintf("the deck plans %d sessions (%d cases x 2 identity assignments x 2 orders x their branches x %d repeats), more than %d (MaxPlannedSessions), the limit for a deck",
			n, len(d.Cases), d.Repeats, MaxPlannedSessions)
		return &at
	}
	return nil
}
