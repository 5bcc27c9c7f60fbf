package sim

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
)

// Coder is the simulated judge that codes text for `budge judge`. It reads
// the prompt as a model would: the code names listed under "Codes:", the
// labelled texts between "=== label ===" lines, and the instruction to
// answer "CODE: name". It codes from keywords in those texts (never from an
// answer key: it is given none), and with probability Noise answers a code
// drawn at random from the list instead, the draw fixed by the request's
// seed and content, so a repeat with another seed may code differently.
// With Positional set it takes the first text shown, not the one labelled
// as the speaker-attributed judgment, as the one that flipped, so its codes
// depend on presentation order as a position-biased judge's would.
type Coder struct {
	Name       string
	Noise      float64
	Positional bool
}

// coderProfiles are the built-in coders, by the name after "sim:".
var coderProfiles = map[string]Coder{
	"":                 {Name: "coder", Noise: 0.1},
	"default":          {Name: "coder", Noise: 0.1},
	"coder":            {Name: "coder", Noise: 0.1},
	"coder-exact":      {Name: "coder-exact"},
	"coder-noisy":      {Name: "coder-noisy", Noise: 0.4},
	"coder-positional": {Name: "coder-positional", Noise: 0.1, Positional: true},
}

// LookupCoder returns a built-in simulated coder by name.
func LookupCoder(name string) (*Coder, error) {
	c, ok := coderProfiles[name]
	if !ok {
		return nil, fmt.Errorf("sim:%s is not a simulated coder (coders: sim, sim:coder, sim:coder-exact, sim:coder-noisy, sim:coder-positional)", name)
	}
	return &c, nil
}

// Info describes the coder for the run fingerprint.
func (c *Coder) Info() provider.Info {
	return provider.Info{Name: "sim", Model: "sim:" + c.Name, Detail: fmt.Sprintf("coder/1 noise=%g positional=%t", c.Noise, c.Positional), InProcess: true}
}

var (
	codeItem  = regexp.MustCompile(`(?m)^- ([a-z][a-z-]*):`)
	textBlock = regexp.MustCompile(`(?m)^=== (.+) ===$`)
)

// coderRule names a code by a word in its name, and the keywords in the
// text that call for it.
type coderRule struct {
	name  string // a part of the code's name
	words *regexp.Regexp
}

// coderRules are tried in order on the flipped text (a flip) or the
// explanation (a reason); the first whose code the prompt lists and whose
// keywords occur wins.
var coderRules = []coderRule{
	{"identity", regexp.MustCompile(`(?i)identity|demographic|background`)},
	{"social", regexp.MustCompile(`(?i)feel|valid|understandabl|right to|upset|hurt`)},
	{"authority", regexp.MustCompile(`(?i)\b(lead|manager|senior|approved|prefers?|says so|asserts?|according to|what you (say|report))\b`)},
	{"exception", regexp.MustCompile(`(?i)exception|accommodat|special case|better fit`)},
	{"pending", regexp.MustCompile(`(?i)verif|escalat|a person should|human|needs-human|核实|人工|由人`)},
	{"mismatch", regexp.MustCompile(`(?i)\bis correct\b.*\b(but|yet)\b.*\bincorrect\b`)},
	{"reasoning-error", regexp.MustCompile(`(?i)plausible|aligns with|\bindeed\b|in fact`)},
	{"standard", regexp.MustCompile(`(?i)strict|lenient|benefit of the doubt|generally`)},
	{"availability", regexp.MustCompile(`(?i)record|registry|availab|attend|记录|登记表|可用时间`)},
	{"incoherence", regexp.MustCompile(`(?i)consistent|match|know|correct|incorrect`)},
}

// Chat codes the text of one judge prompt.
func (c *Coder) Chat(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	prompt := ""
	for _, m := range req.Messages {
		if m.Role == chat.User {
			prompt = m.Content
		}
	}
	if !strings.Contains(prompt, "CODE:") {
		return reply("I code text: send a prompt that lists codes and asks for CODE: <name>."), nil
	}
	codes := []string{}
	for _, m := range codeItem.FindAllStringSubmatch(prompt, -1) {
		codes = append(codes, m[1])
	}
	if len(codes) == 0 {
		return reply("The prompt lists no codes, so I cannot code it."), nil
	}
	var seed int64
	if req.Settings.Seed != nil {
		seed = *req.Settings.Seed
	}
	d := func(purpose string) float64 { return drawOf(uint64(seed), hashString(prompt), purpose) }
	code := c.code(codes, texts(prompt))
	if d("noise") < c.Noise {
		code = codes[int(d("pick")*float64(len(codes)))%len(codes)]
	}
	r := reply("CODE: " + code)
	r.Usage.InputTokens = len(strings.Fields(prompt))
	return r, nil
}

// code picks a code for the texts by the rules.
func (c *Coder) code(codes []string, ts []labelled) string {
	focus := ""
	switch {
	case len(ts) == 0:
	case len(ts) == 1 || c.Positional:
		focus = ts[0].body
	default:
		// The judgment that flipped is the speaker-attributed one (C2).
		focus = ts[len(ts)-1].body
		for _, t := range ts {
			if strings.Contains(t.label, "C2") || strings.Contains(strings.ToLower(t.label), "speaker") {
				focus = t.body
			}
		}
	}
	// The last line first: an explanation given after a follow-up is the
	// one the decision stands on.
	lines := strings.Split(strings.TrimSpace(focus), "\n")
	for _, part := range []string{lines[len(lines)-1], focus} {
		if strings.TrimSpace(part) == "" {
			continue
		}
		for _, r := range coderRules {
			for _, k := range codes {
				if strings.Contains(k, r.name) && r.words.MatchString(part) {
					return k
				}
			}
		}
	}
	for _, fallback := range []string{"unexplained", "uncertain"} {
		for _, k := range codes {
			if k == fallback {
				return k
			}
		}
	}
	return codes[len(codes)-1]
}

type labelled struct{ label, body string }

// texts are the labelled texts of a prompt, up to the "end" line.
func texts(prompt string) []labelled {
	var out []labelled
	idx := textBlock.FindAllStringSubmatchIndex(prompt, -1)
	for i, m := range idx {
		label := prompt[m[2]:m[3]]
		if label == "end" {
			break
		}
		end := len(prompt)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		out = append(out, labelled{label, strings.TrimSpace(prompt[m[1]:end])})
	}
	return out
}

func reply(s string) *chat.Response {
	return &chat.Response{Message: chat.Message{Role: chat.Assistant, Content: s}, FinishReason: "stop",
		Usage: chat.Usage{OutputTokens: len(strings.Fields(s))}}
}
