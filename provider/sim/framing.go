package sim

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"hash/fnv"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/stats"
	"github.com/buildlab/budge/textfile"
)

// FramingVersion changes whenever the simulated judge's behaviour for a
// given profile and knowledge changes.
const FramingVersion = "sim-framing/1"

// FramingProfile holds the knobs of the simulated judge for the DialDefer
// protocol. The judge reads the prompt as a model would: it finds the
// question it knows, the answer shown, and whether a speaker gave that
// answer; it never sees which condition a session is.
type FramingProfile struct {
	Name string `yaml:"name" json:"name"`
	// RightTrue and RightFalse are the chances of judging right when the
	// answer is presented as a statement: accepting a correct one, rejecting
	// an incorrect one (C1-True and C1-False accuracy).
	RightTrue  float64 `yaml:"right_true" json:"right_true"`
	RightFalse float64 `yaml:"right_false" json:"right_false"`
	// Deference is added to the chance of accepting when the answer is a
	// speaker's (negative for skepticism). The planted DDS is 200×Deference
	// percentage points while no acceptance chance is clipped at 0 or 1.
	Deference float64 `yaml:"deference" json:"deference"`
	// MitigatedDeference, when set, replaces Deference if the request has a
	// system prompt; AIDeference when the judged speaker's name says it is
	// an AI (AI, LLM, GPT, Llama, bot, model, agent).
	MitigatedDeference *float64 `yaml:"mitigated_deference,omitempty" json:"mitigated_deference,omitempty"`
	AIDeference        *float64 `yaml:"ai_deference,omitempty" json:"ai_deference,omitempty"`
	// Noise is the chance that a judgment is drawn afresh for this request
	// instead of from the judge's fixed belief about the item (which is what
	// makes the C1 and C2 answers of one item agree).
	Noise float64 `yaml:"noise" json:"noise"`
	// NearJSON: the reply is recoverable near-JSON (fenced, LaTeX escapes);
	// Unparseable: no choice can be read; Refusal: a flagged refusal.
	NearJSON    float64 `yaml:"near_json" json:"near_json"`
	Unparseable float64 `yaml:"unparseable" json:"unparseable"`
	Refusal     float64 `yaml:"refusal" json:"refusal"`
	// Flip is the chance of changing the answer after a challenge, by
	// challenge family ("default" for families not listed).
	Flip           map[string]float64 `yaml:"flip" json:"flip"`
	TransportError float64            `yaml:"transport_error" json:"transport_error"`
	LatencyMS      float64            `yaml:"latency_ms,omitempty" json:"latency_ms,omitempty"`
}

func flips(def, expert, consensus float64) map[string]float64 {
	return map[string]float64{"default": def, "expert": expert, "study": expert, "consensus": consensus}
}

var framingProfiles = map[string]FramingProfile{
	// default: the seed's worked example, C1 60/80 and C2 75/65, DDS +30.
	"default": {Name: "default", RightTrue: 0.60, RightFalse: 0.80, Deference: 0.15, Noise: 0.1, NearJSON: 0.03,
		Flip: flips(0.15, 0.30, 0.25)},
	// neutral: framing changes nothing (DDS 0).
	"neutral": {Name: "neutral", RightTrue: 0.70, RightFalse: 0.80, Noise: 0.1, NearJSON: 0.03, Flip: flips(0.05, 0.05, 0.05)},
	// skeptic: more skeptical of speakers (DDS −20).
	"skeptic": {Name: "skeptic", RightTrue: 0.70, RightFalse: 0.75, Deference: -0.10, Noise: 0.1, Flip: flips(0.05, 0.05, 0.05)},
	// mitigable: deference that a system prompt removes and AI speaker
	// labels shrink.
	"mitigable": {Name: "mitigable", RightTrue: 0.60, RightFalse: 0.80, Deference: 0.15, MitigatedDeference: fptr(0), AIDeference: fptr(0.03),
		Noise: 0.1, Flip: flips(0.15, 0.30, 0.25)},
	// overcorrects: a system prompt turns deference into skepticism.
	"overcorrects": {Name: "overcorrects", RightTrue: 0.60, RightFalse: 0.80, Deference: 0.15, MitigatedDeference: fptr(-0.15),
		Noise: 0.1, Flip: flips(0.15, 0.30, 0.25)},
	// messy: the default judge with unreadable replies and refusals.
	"messy": {Name: "messy", RightTrue: 0.60, RightFalse: 0.80, Deference: 0.15, Noise: 0.1, NearJSON: 0.15, Unparseable: 0.04, Refusal: 0.02,
		Flip: flips(0.15, 0.30, 0.25)},
}

func fptr(v float64) *float64 { return &v }

// FramingProfileNames lists the built-in framing profiles.
func FramingProfileNames() []string { return slices.Sorted(maps.Keys(framingProfiles)) }

// LookupFramingProfile returns a built-in framing profile, or loads a YAML
// profile file when name is a path.
func LookupFramingProfile(name string) (FramingProfile, error) {
	if p, ok := framingProfiles[cmp.Or(name, "default")]; ok {
		return p, nil
	}
	return loadProfile(name, "framing simulator profile", framingProfiles)
}

func (p *FramingProfile) nameOr(name string) { p.Name = cmp.Or(p.Name, name) }

// Validate reports every knob out of range.
func (p FramingProfile) Validate() []error {
	var errs []error
	check := func(name string, v, lo float64) {
		if v < lo || v > 1 {
			errs = append(errs, fmt.Errorf("%s must be between %v and 1, got %v", name, lo, v))
		}
	}
	check("right_true", p.RightTrue, 0)
	check("right_false", p.RightFalse, 0)
	check("deference", p.Deference, -1)
	if p.MitigatedDeference != nil {
		check("mitigated_deference", *p.MitigatedDeference, -1)
	}
	if p.AIDeference != nil {
		check("ai_deference", *p.AIDeference, -1)
	}
	check("noise", p.Noise, 0)
	check("near_json", p.NearJSON, 0)
	check("unparseable", p.Unparseable, 0)
	check("refusal", p.Refusal, 0)
	check("transport_error", p.TransportError, 0)
	for f, v := range p.Flip {
		check("flip."+f, v, 0)
	}
	return errs
}

// KnowledgeEntry is one question the simulated judge knows, with the
// answers it knows to be correct and incorrect.
type KnowledgeEntry struct {
	Question  string   `json:"question"`
	Correct   []string `json:"correct"`
	Incorrect []string `json:"incorrect"`
}

// Knowledge is the simulated judge's answer table: what it would know about
// each question. It is configured once, from a file or a list, and never
// handed over with a request.
type Knowledge struct {
	entries []KnowledgeEntry
	// byKey finds the questions starting with a prompt's next keyLen bytes,
	// grouped by length, so a hit costs one lookup per distinct length
	// however many questions share a beginning ("What is the ...").
	byKey map[string]*keyGroup
	short []int // questions shorter than keyLen
	sha   string
}

type keyGroup struct {
	lengths []int                  // distinct question lengths, longest first
	byLen   map[int]map[string]int // length -> question -> entry
}

const keyLen = 16

// NewKnowledge indexes entries; entries with the same question are merged.
func NewKnowledge(entries []KnowledgeEntry) *Knowledge {
	k := &Knowledge{byKey: map[string]*keyGroup{}}
	seen := map[string]int{}
	h := fnv.New64a()
	for _, e := range entries {
		if e.Question == "" {
			continue
		}
		if i, ok := seen[e.Question]; ok {
			k.entries[i].Correct = append(k.entries[i].Correct, e.Correct...)
			k.entries[i].Incorrect = append(k.entries[i].Incorrect, e.Incorrect...)
			continue
		}
		i := len(k.entries)
		seen[e.Question] = i
		k.entries = append(k.entries, KnowledgeEntry{Question: e.Question, Correct: append([]string(nil), e.Correct...), Incorrect: append([]string(nil), e.Incorrect...)})
		if q := e.Question; len(q) >= keyLen {
			g := k.byKey[q[:keyLen]]
			if g == nil {
				g = &keyGroup{byLen: map[int]map[string]int{}}
				k.byKey[q[:keyLen]] = g
			}
			if g.byLen[len(q)] == nil {
				g.byLen[len(q)] = map[string]int{}
				g.lengths = append(g.lengths, len(q))
				sort.Sort(sort.Reverse(sort.IntSlice(g.lengths)))
			}
			g.byLen[len(q)][q] = i
		} else {
			k.short = append(k.short, i)
		}
	}
	for _, e := range k.entries {
		h.Write([]byte(e.Question))
		h.Write([]byte{0})
		for _, a := range e.Correct {
			h.Write([]byte(a))
			h.Write([]byte{1})
		}
		for _, a := range e.Incorrect {
			h.Write([]byte(a))
			h.Write([]byte{2})
		}
	}
	k.sha = hex.EncodeToString(h.Sum(nil))
	return k
}

// LoadKnowledge reads a JSONL file of knowledge entries.
func LoadKnowledge(path string) (*Knowledge, error) {
	text, err := textfile.Read(path)
	if err != nil {
		return nil, fmt.Errorf("simulator knowledge: %w", err)
	}
	var entries []KnowledgeEntry
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		b := strings.TrimSpace(sc.Text())
		if b == "" {
			continue
		}
		var e KnowledgeEntry
		dec := json.NewDecoder(strings.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("simulator knowledge %s:%d: %v", path, line, err)
		}
		if e.Question == "" || len(e.Correct)+len(e.Incorrect) == 0 {
			return nil, fmt.Errorf("simulator knowledge %s:%d: an entry needs a question and at least one answer", path, line)
		}
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("simulator knowledge %s: %w", path, err)
	}
	return NewKnowledge(entries), nil
}

// Len is the number of questions known.
func (k *Knowledge) Len() int { return len(k.entries) }

// find returns the known question that occurs in text (the longest when
// several do) and where it ends.
func (k *Knowledge) find(text string) (int, int) {
	best, bestEnd, bestLen := -1, 0, 0
	for i := 0; i+keyLen <= len(text); i++ {
		g := k.byKey[text[i:i+keyLen]]
		if g == nil {
			continue
		}
		for _, l := range g.lengths {
			if l <= bestLen || i+l > len(text) {
				continue
			}
			if e, ok := g.byLen[l][text[i:i+l]]; ok {
				best, bestEnd, bestLen = e, i+l, l
				break
			}
		}
	}
	if best >= 0 {
		return best, bestEnd
	}
	for _, e := range k.short {
		q := k.entries[e].Question
		if j := indexWord(text, q, 0); j >= 0 && len(q) > bestLen {
			best, bestEnd, bestLen = e, j+len(q), len(q)
		}
	}
	return best, bestEnd
}

// indexWord finds s in text at or after from where it is not part of a
// longer word.
func indexWord(text, s string, from int) int {
	for i := from; i <= len(text); {
		j := strings.Index(text[i:], s)
		if j < 0 {
			return -1
		}
		st, en := i+j, i+j+len(s)
		okL := st == 0 || !isWordByte(s[0]) || !isWordByte(text[st-1])
		okR := en == len(text) || !isWordByte(s[len(s)-1]) || !isWordByte(text[en])
		if okL && okR {
			return st
		}
		i = st + 1
	}
	return -1
}

// Judge is the simulated assistant for framing prompts.
type Judge struct {
	p      FramingProfile
	k      *Knowledge
	detail string
	tries  attempts
}

// NewJudge returns a simulated judge with a profile and an answer table.
func NewJudge(p FramingProfile, k *Knowledge) *Judge {
	if k == nil {
		k = NewKnowledge(nil)
	}
	b, _ := json.Marshal(p)
	return &Judge{p: p, k: k, detail: FramingVersion + " " + string(b) + " knowledge " + k.sha[:16]}
}

// Info describes the judge for the run fingerprint.
func (j *Judge) Info() provider.Info {
	return provider.Info{Name: "sim", Model: "sim:" + j.p.Name, Detail: j.detail, InProcess: true}
}

var (
	speakerTag = regexp.MustCompile(`^([A-Za-z0-9][^:'"\n]{0,39}):[ \t]`)
	aiName     = regexp.MustCompile(`(?i)\b(ai|llm|gpt[-\w.]*|llama|bot|model|agent|assistant)\b`)
	prevChoice = regexp.MustCompile(`"(?:chosen_answer|answer)"\s*:\s*"([12])"`)
)

// reading is what the judge understands of a judgment prompt.
type reading struct {
	known    bool
	truth    bool   // the answer shown is correct
	speaker  string // who gave it, "" for a statement
	key      string // the item and answer, for the judge's fixed belief
	accept   string // the option number that accepts
	field    string // the JSON key to answer in
	question string
}

func (j *Judge) read(prompt string) reading {
	r := reading{accept: "1", field: "answer"}
	if strings.Contains(prompt, "chosen_answer") {
		r.field = "chosen_answer"
	}
	if optionTwoAccepts(prompt) {
		r.accept = "2"
	}
	e, end := j.k.find(prompt)
	if e < 0 {
		r.key = prompt
		return r
	}
	ent := j.k.entries[e]
	r.question = ent.Question
	pos, ans, truth := -1, "", false
	try := func(list []string, t bool, from int) {
		for _, a := range list {
			if a == "" {
				continue
			}
			if i := indexWord(prompt, a, from); i >= 0 && (pos < 0 || i < pos || i == pos && len(a) > len(ans)) {
				pos, ans, truth = i, a, t
			}
		}
	}
	try(ent.Correct, true, end)
	try(ent.Incorrect, false, end)
	if pos < 0 { // the template put the answer before the question
		try(ent.Correct, true, 0)
		try(ent.Incorrect, false, 0)
	}
	if pos < 0 {
		r.key = prompt
		return r
	}
	r.known, r.truth, r.key = true, truth, ent.Question+"\x00"+ans
	// A speaker gave the answer when its line starts with a name tag and
	// that name is also spoken of elsewhere in the prompt ("Is Speaker 2
	// correct?"); a field label such as "Proposed answer:" is not.
	ls := strings.LastIndexByte(prompt[:pos], '\n') + 1
	if m := speakerTag.FindStringSubmatch(prompt[ls:]); m != nil && ls+len(m[0]) <= pos {
		name := m[1]
		rest := strings.ReplaceAll(prompt, "\n"+name+":", "\n")
		if strings.HasPrefix(rest, name+":") {
			rest = rest[len(name)+1:]
		}
		if strings.Contains(rest, name) {
			r.speaker = name
		}
	}
	return r
}

// Chat answers one request.
func (j *Judge) Chat(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	if err := arrive(ctx, j.p.LatencyMS); err != nil {
		return nil, err
	}
	var seed int64
	if req.Settings.Seed != nil {
		seed = *req.Settings.Seed
	}
	digest := digestOf(req.Messages)
	d := func(purpose string) float64 { return drawOf(uint64(seed), digest, purpose) }
	if j.p.TransportError > 0 && d(fmt.Sprintf("transport-%d", j.tries.next(seed, digest))) < j.p.TransportError {
		return nil, transportFault()
	}
	system, prompt, answers, last := "", "", 0, ""
	var prev string
	for _, m := range req.Messages {
		switch m.Role {
		case chat.System:
			system += m.Content
		case chat.User:
			if prompt == "" {
				prompt = m.Content
			}
			last = m.Content
		case chat.Assistant:
			answers++
			prev = m.Content
		}
	}
	r := j.read(prompt)
	var choice, why string
	if answers == 0 {
		choice, why = j.judge(r, system, d)
	} else {
		choice, why = j.reconsider(r, prev, last, d)
	}
	msg := j.reply(r, choice, why, d)
	resp := &chat.Response{Message: msg, FinishReason: "stop",
		Usage: chat.Usage{InputTokens: (len(prompt) + len(system) + len(last)) / 4, OutputTokens: len(msg.Content) / 4},
		Meta: chat.Meta{Provider: "sim", ModelID: "budge-sim-framing-" + j.p.Name, Fingerprint: FramingVersion,
			RequestID: "sim-" + hex.EncodeToString(binary.BigEndian.AppendUint64(nil, digest))}}
	return resp, nil
}

// judge makes the first judgment: accept with the profile's chance, which a
// speaker's attribution shifts by the deference knob.
func (j *Judge) judge(r reading, system string, d func(string) float64) (string, string) {
	p := 0.5
	if r.known {
		p = 1 - j.p.RightFalse
		if r.truth {
			p = j.p.RightTrue
		}
		if r.speaker != "" {
			shift := j.p.Deference
			if system != "" && j.p.MitigatedDeference != nil {
				shift = *j.p.MitigatedDeference
			}
			if aiName.MatchString(r.speaker) && j.p.AIDeference != nil {
				shift = *j.p.AIDeference
			}
			p = clamp01(p + shift)
		}
	}
	// The judge's belief about an item is fixed (the same draw whatever the
	// framing), so C1 and C2 answers agree unless the framing moves them.
	u := drawOf(0, hashString(r.key), "belief")
	if d("noise") < j.p.Noise {
		u = d("fresh")
	}
	who := "the statement"
	if r.speaker != "" {
		who = r.speaker
	}
	if u < p {
		return r.accept, "The answer given is consistent with what I know, so " + who + " is correct."
	}
	return other(r.accept), "The answer given does not match what I know, so " + who + " is incorrect."
}

// reconsider answers a challenge: flip with the chance for the family the
// message reads as.
func (j *Judge) reconsider(r reading, prev, challenge string, d func(string) float64) (string, string) {
	was := ""
	if m := prevChoice.FindStringSubmatch(prev); m != nil {
		was = m[1]
	}
	if was == "" {
		was = r.accept
	}
	fam := challengeFamily(challenge)
	p, ok := j.p.Flip[fam]
	if !ok {
		p = j.p.Flip["default"]
	}
	if d("flip") < p {
		return other(was), "On reflection I change my answer."
	}
	return was, "I have reconsidered and keep my answer."
}

func (j *Judge) reply(r reading, choice, why string, d func(string) float64) chat.Message {
	switch {
	case d("refusal") < j.p.Refusal:
		return chat.Message{Role: chat.Assistant, Refusal: "I can't help with judging this."}
	case d("unparseable") < j.p.Unparseable:
		return chat.Message{Role: chat.Assistant, Content: "It is hard to say; there are arguments both ways."}
	case d("near-json") < j.p.NearJSON:
		return chat.Message{Role: chat.Assistant, Content: "```json\n{\"" + r.field + "\": \"" + choice + "\", \"reasoning\": \"Checking it against \\(x\\): " + why + "\"}\n```"}
	}
	b, _ := json.Marshal(map[string]string{r.field: choice, "reasoning": why})
	return chat.Message{Role: chat.Assistant, Content: string(b)}
}

var challengeWords = []struct {
	family string
	words  []string
}{
	{"expert", []string{"expert", "years", "field", "professional"}},
	{"study", []string{"study", "research", "peer-reviewed", "paper"}},
	{"consensus", []string{"everyone", "consensus", "agrees", "all agree"}},
	{"urgency", []string{"harm", "critical", "urgent", "dangerous", "matters a great deal"}},
	{"disappointment", []string{"disappointed", "sad", "upset"}},
	{"confident", []string{"sure", "certain", "confident"}},
}

// challengeFamily is the judge's reading of a challenge message by its
// wording, as a model would read it: not the plan's label.
func challengeFamily(text string) string {
	low := strings.ToLower(text)
	for _, f := range challengeWords {
		for _, w := range f.words {
			if strings.Contains(low, w) {
				return f.family
			}
		}
	}
	return "disagree"
}

func other(c string) string {
	if c == "1" {
		return "2"
	}
	return "1"
}

func clamp01(x float64) float64 {
	if x < 0 {
		return 0
	}
	if x > 1 {
		return 1
	}
	return x
}

func digestOf(msgs []chat.Message) uint64 {
	h := fnv.New64a()
	for _, m := range msgs {
		h.Write([]byte(m.Role))
		h.Write([]byte{0})
		h.Write([]byte(m.Content))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

func hashString(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// drawOf is a uniform number in [0,1) fixed by its inputs.
func drawOf(seed, digest uint64, purpose string) float64 {
	return stats.SeedHash(drawHash(seed, digest, purpose).Sum64()).Uniform()
}

// drawHash hashes what fixes a draw: the request's seed and digest and the
// purpose of the draw.
func drawHash(seed, digest uint64, purpose string) hash.Hash64 {
	h := fnv.New64a()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], seed)
	binary.LittleEndian.PutUint64(b[8:], digest)
	h.Write(b[:])
	h.Write([]byte(purpose))
	return h
}

// optionTwoAccepts reports whether the prompt offers "yes" as option 2
// ("2. Yes ...", "Option 2: Yes ...", or a yes after an ANSWER_2 marker):
// most templates offer it as option 1.
func optionTwoAccepts(prompt string) bool {
	yes := func(s string) bool {
		s = strings.TrimLeft(s, " \t-.:)\n")
		return len(s) >= 3 && strings.EqualFold(s[:3], "yes")
	}
	if i := strings.Index(prompt, "ANSWER_2>>>"); i >= 0 && yes(prompt[i+len("ANSWER_2>>>"):]) {
		return true
	}
	for _, line := range strings.Split(prompt, "\n") {
		l := strings.TrimSpace(line)
		if len(l) > 6 && strings.EqualFold(l[:6], "option") {
			l = strings.TrimSpace(l[6:])
		}
		if strings.HasPrefix(l, "2") && len(l) > 1 && strings.ContainsRune("-.:) ", rune(l[1])) && yes(l[1:]) {
			return true
		}
	}
	return false
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}
