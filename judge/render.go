package judge

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"sort"
	"strings"
)

// Header is what a rendered audit says about the judge run it comes from.
type Header struct {
	Run    string `json:"run_id"`     // the judge's own run
	Source string `json:"source_run"` // the run whose texts were coded
	Judge  string `json:"judge"`      // the judge model
	// Blinding says what the judge was shown of identity labels.
	Blinding string `json:"blinding"`
}

// Render writes the audit as text, md, json or html (a self-contained
// page holding the text audit).
func Render(w io.Writer, format string, h Header, a Audit) error {
	switch format {
	case "html":
		var b strings.Builder
		if err := renderText(&b, h, a, false); err != nil {
			return err
		}
		_, err := fmt.Fprintf(w, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>judge run %s</title>"+
			"<style>body{font-family:system-ui,sans-serif;margin:1.5rem}pre{white-space:pre-wrap}</style></head>\n<body>\n<h1>Judge run %s on run %s</h1>\n<pre>%s</pre>\n</body></html>\n",
			html.EscapeString(h.Run), html.EscapeString(h.Run), html.EscapeString(h.Source), html.EscapeString(b.String()))
		return err
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(struct {
			Header
			Audit
		}{h, a})
	case "md":
		return renderText(w, h, a, true)
	case "text", "":
		return renderText(w, h, a, false)
	}
	return fmt.Errorf("judge: unknown format %q (want text, md, json or html)", format)
}

func renderText(w io.Writer, h Header, a Audit, md bool) error {
	var b strings.Builder
	title := func(s string) {
		if md {
			fmt.Fprintf(&b, "\n## %s\n\n", s)
		} else {
			fmt.Fprintf(&b, "\n%s\n", s)
		}
	}
	line := func(format string, args ...any) {
		if md {
			b.WriteString("- ")
		} else {
			b.WriteString("  ")
		}
		fmt.Fprintf(&b, format+"\n", args...)
	}
	if md {
		fmt.Fprintf(&b, "# Judge %s on run %s\n\n", h.Run, h.Source)
	} else {
		fmt.Fprintf(&b, "judge run %s on run %s\n", h.Run, h.Source)
	}
	line("judge model: %s; codebook %s; %s", h.Judge, a.Codebook, h.Blinding)
	line("tasks: %d %s; %d repeat(s); %d judgments: %d read, %d repaired, %d unreadable, %d failed",
		a.Tasks, a.Kind, a.Repeats, a.Calls, a.Read, a.Repaired, a.Unreadable, a.Failed)
	line("tasks with a code: %s", a.Coded)
	if len(a.Applicable) > 0 {
		var parts []string
		for _, c := range sortedKeys(a.Applicable) {
			parts = append(parts, fmt.Sprintf("%s %d", c, a.Applicable[c]))
		}
		line("further applicable codes named beside the primary one (judgments): %s", strings.Join(parts, ", "))
	}

	title("Codes (primary code per task)")
	groups := map[string]bool{}
	for _, c := range a.Counts {
		for g := range c.ByGroup {
			groups[g] = true
		}
	}
	gs := make([]string, 0, len(groups))
	for g := range groups {
		gs = append(gs, g)
	}
	sort.Strings(gs)
	if md {
		fmt.Fprintf(&b, "| code | all | %s |\n|---|---|%s\n", strings.Join(gs, " | "), strings.Repeat("---|", len(gs)))
	}
	for _, c := range a.Counts {
		var parts []string
		for _, g := range gs {
			parts = append(parts, fmt.Sprintf("%d/%d", c.ByGroup[g], groupTotal(a, g)))
		}
		if md {
			fmt.Fprintf(&b, "| %s | %d/%d | %s |\n", c.Code, c.Total, a.Tasks, strings.Join(parts, " | "))
			continue
		}
		var named []string
		for i, g := range gs {
			named = append(named, g+" "+parts[i])
		}
		fmt.Fprintf(&b, "  %-28s %d/%d  (%s)\n", c.Code, c.Total, a.Tasks, strings.Join(named, ", "))
	}

	title("Audit")
	if a.OrderSwap.Den > 0 {
		line("order-swap agreement: %s (same code with either text first, per task and repeat)", a.OrderSwap)
	} else {
		line("order-swap agreement: not applicable (no task has two texts to swap)")
	}
	line("repeat stability: %s (every repeat the same code, per task and order)", a.Stability)
	if len(a.Agreement) == 0 {
		line("agreement with reviewers: none (the run has no finished review)")
	}
	for _, ag := range a.Agreement {
		k := "undefined"
		if ag.Kappa != nil {
			k = fmt.Sprintf("%.2f [%.2f, %.2f]", *ag.Kappa, *ag.KappaLo, *ag.KappaHi)
		}
		line("vs reviewer %s: same code %s; Cohen's kappa %s; %d excluded", ag.Rater, ag.Same, k, ag.Excluded)
	}
	if len(a.Warnings) > 0 {
		title("Warnings")
		for _, w := range a.Warnings {
			line("%s", w)
		}
	}

	title("Per task")
	for _, t := range a.PerTask {
		code := t.Code
		if code == "" {
			code = "(no code)"
		}
		line("%s [%s]: %s (%s of read judgments; all: %s)", t.Task, t.Group, code, t.Votes, strings.Join(dash(t.All), " "))
	}
	_, err := io.WriteString(w, strings.TrimPrefix(b.String(), "\n"))
	return err
}

func groupTotal(a Audit, g string) int {
	n := 0
	for _, t := range a.PerTask {
		if t.Group == g {
			n++
		}
	}
	return n
}

func dash(s []string) []string {
	out := make([]string, len(s))
	for i, c := range s {
		out[i] = c
		if c == "" {
			out[i] = "-"
		}
	}
	return out
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
