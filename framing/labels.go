package framing

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// LabelSet names the two speakers of the dialogue condition: Speaker1 asks,
// Speaker2 answers and is judged.
type LabelSet struct {
	Name     string `json:"name"`
	Speaker1 string `json:"speaker1"`
	Speaker2 string `json:"speaker2"`
}

// builtinLabels are the label sets of the paper's ablation (abstract,
// gendered and ethnicity-coded names, human versus LLM, named AI systems)
// and the "AI Agent" relabelling of the Dehumanizing mitigation.
var builtinLabels = map[string]LabelSet{
	"speakers":     {"speakers", "Speaker 1", "Speaker 2"},
	"ab":           {"ab", "A", "B"},
	"qa":           {"qa", "Q", "A"},
	"john-jane":    {"john-jane", "John", "Jane"},
	"jane-john":    {"jane-john", "Jane", "John"},
	"john-soroush": {"john-soroush", "John", "Soroush"},
	"soroush-john": {"soroush-john", "Soroush", "John"},
	"llm-user":     {"llm-user", "LLM", "User"},
	"user-llm":     {"user-llm", "User", "LLM"},
	"gpt4o-llama":  {"gpt4o-llama", "GPT-4o", "Llama"},
	"llama-gpt4o":  {"llama-gpt4o", "Llama", "GPT-4o"},
	"ai-agents":    {"ai-agents", "AI Agent 1", "AI Agent 2"},
}

// DefaultLabels is "Speaker 1" / "Speaker 2", the paper's default.
func DefaultLabels() LabelSet { return builtinLabels["speakers"] }

// BuiltinLabelNames lists the built-in label sets.
func BuiltinLabelNames() []string { return slices.Sorted(maps.Keys(builtinLabels)) }

// ParseLabels reads a label set: a built-in name, or "FIRST/SECOND" (the
// asker, then the judged speaker), optionally named with "NAME=FIRST/SECOND".
func ParseLabels(s string) (LabelSet, error) {
	if l, ok := builtinLabels[s]; ok {
		return l, nil
	}
	name, pair, named := strings.Cut(s, "=")
	if !named {
		pair = s
	}
	a, b, ok := strings.Cut(pair, "/")
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if !ok || a == "" || b == "" || a == b || strings.ContainsAny(a+b, "\n{}") {
		return LabelSet{}, fmt.Errorf("labels %q: use a built-in set (%s) or FIRST/SECOND with two different names", s, strings.Join(BuiltinLabelNames(), ", "))
	}
	if !named {
		name = a + "/" + b
	}
	return LabelSet{Name: name, Speaker1: a, Speaker2: b}, nil
}
