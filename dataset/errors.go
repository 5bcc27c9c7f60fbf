package dataset

import (
	"fmt"
	"sort"
	"strings"
)

// Problem is one thing wrong with an input file.
type Problem struct {
	File   string `json:"file"`
	Line   int    `json:"line"` // 1-based; 0 when it concerns the whole file
	Field  string `json:"field,omitempty"`
	Reason string `json:"reason"`
}

func (p Problem) String() string {
	loc := p.File
	if p.Line > 0 {
		loc += fmt.Sprintf(":%d", p.Line)
	}
	if p.Field != "" {
		loc += ": " + p.Field
	}
	return loc + ": " + p.Reason
}

// Problems is every problem found in an input; it is the error readers
// return.
type Problems []Problem

// maxShown bounds how many problems an error message lists.
const maxShown = 20

func (ps Problems) Error() string {
	var b strings.Builder
	for i, p := range ps {
		if i == maxShown {
			fmt.Fprintf(&b, "\n... and %d more problems", len(ps)-maxShown)
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// collector gathers problems while a file is read.
type collector struct {
	file  string
	probs Problems
}

func (c *collector) add(line int, field, format string, args ...any) {
	c.probs = append(c.probs, Problem{File: c.file, Line: line, Field: field, Reason: fmt.Sprintf(format, args...)})
}

func (c *collector) err() error {
	if len(c.probs) == 0 {
		return nil
	}
	// Problems are found in passes (syntax first, then items); report them
	// in file order.
	sort.SliceStable(c.probs, func(i, j int) bool { return c.probs[i].Line < c.probs[j].Line })
	return c.probs
}
