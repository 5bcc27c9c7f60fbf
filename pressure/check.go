package pressure

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/buildlab/budge/extract"
	"github.com/buildlab/budge/textkey"
)

// Check validates the deck against its rule and the design: references agree
// with the rule before and after correction, determinate cases are balanced
// between P and Q, pressure favours the less eligible profile and carries no
// evidence, ids are unique, required fields are present. It returns every
// problem found.
func (d *Deck) Check() []Problem {
	var ps []Problem
	add := func(path, caseID, format string, args ...any) {
		ps = append(ps, Problem{File: d.Path, Line: d.nearestLine(path), Field: strings.TrimPrefix(path, "$."), Case: caseID, Msg: fmt.Sprintf(format, args...)})
	}
	if d.Format != DeckFormat {
		add("$.format", "", "must be %q, got %q", DeckFormat, d.Format)
	}
	if d.Name == "" {
		add("$.name", "", "is required")
	}
	if d.Kind != "discovery" && d.Kind != "confirmation" {
		add("$.kind", "", "must be discovery or confirmation, got %q", d.Kind)
	}
	switch {
	case d.Language == "":
		add("$.language", "", "is required (for example en or zh)")
	case !languageTag.MatchString(d.Language):
		add("$.language", "", "must be a language tag such as en, zh or pt-BR, got %q", d.Language)
	}
	if d.PolicyVersion == "" {
		add("$.policy_version", "", "is required")
	}
	rule, ok := d.DecisionRule()
	switch {
	case d.Rule == "":
		add("$.rule", "", "is required (%s)", strings.Join(RuleNames(), " or "))
	case !ok && d.Rule != ExplicitRule:
		add("$.rule", "", "unknown rule %q (built in: %s; or %s, to declare every reference yourself)", d.Rule, strings.Join(slices.DeleteFunc(RuleNames(), func(n string) bool { return n == ExplicitRule }), ", "), ExplicitRule)
	}
	if d.Repeats < 1 {
		add("$.repeats", "", "must be at least 1, got %d", d.Repeats)
	}
	for i, a := range d.Arms {
		if !slices.Contains(Arms, a) {
			add(fmt.Sprintf("$.arms[%d]", i), "", "unknown arm %q (arms: %s)", a, strings.Join(Arms, ", "))
		}
	}
	if d.HasArm(ArmUserClaim) {
		if claim, change := d.claimTemplates(); claim == "" {
			add("$.templates.user_claim", "", "is required by the arm %s: budge has no built-in wording in language %q", ArmUserClaim, d.Language)
		} else if !strings.Contains(claim, "{changes}") {
			add("$.templates.user_claim", "", "must show {changes}")
		} else if !strings.Contains(change, "{id}") {
			add("$.templates.user_claim_change", "", "must show {id}")
		}
	}
	id := d.Identity
	for _, f := range []struct{ path, v string }{
		{"$.identity.label", id.Label}, {"$.identity.x", id.X}, {"$.identity.y", id.Y},
		{"$.identity.reviewer", id.Reviewer}, {"$.identity.irrelevance", id.Irrelevance},
		{"$.evidence.name", d.Evidence.Name}, {"$.evidence.provenance", d.Evidence.Provenance},
	} {
		if strings.TrimSpace(f.v) == "" {
			add(f.path, "", "is required")
		}
	}
	if id.X != "" && id.X == id.Y {
		add("$.identity.y", "", "must differ from identity.x")
	}
	for i, term := range d.Evidence.Terms {
		if strings.TrimSpace(term) == "" {
			add(fmt.Sprintf("$.evidence.terms[%d]", i), "", "an evidence term cannot be empty")
		}
	}
	t := d.Templates
	for _, f := range []struct {
		path, v string
		need    []string
	}{
		{"$.templates.application", t.Application, nil},
		{"$.templates.case", t.Case, []string{"{context}", "{profiles}"}},
		{"$.templates.profile", t.Profile, []string{"{id}", "{identity}"}},
		{"$.templates.neutral", t.Neutral, nil},
		{"$.templates.correction_notice", t.CorrectionNotice, nil},
		{"$.templates.evidence_message", t.EvidenceMessage, []string{"{json}"}},
		{"$.templates.tools.availability", t.Tools.Availability, nil},
		{"$.templates.tools.send_invitation", t.Tools.Invitation, nil},
		{"$.templates.tools.update_calendar", t.Tools.Calendar, nil},
	} {
		if strings.TrimSpace(f.v) == "" {
			add(f.path, "", "is required")
			continue
		}
		for _, ph := range f.need {
			if !strings.Contains(f.v, ph) {
				add(f.path, "", "must contain the placeholder %s", ph)
			}
		}
	}
	d.checkNeutral(add)
	d.checkProfileIDs(add)
	if len(d.Cases) == 0 {
		add("$.cases", "", "the deck has no cases")
	}
	caseSeen := map[string]int{}
	recSeen := map[string]string{}
	nP, nQ := 0, 0
	for i, c := range d.Cases {
		at := fmt.Sprintf("$.cases[%d]", i)
		if c.ID == "" {
			add(at+".id", "", "is required")
		} else if !caseIDPattern.MatchString(c.ID) {
			add(at+".id", c.ID, "must be letters, digits, dots, dashes or underscores (it is part of every session id), got %q", c.ID)
		} else if j, dup := caseSeen[textkey.Key(c.ID)]; dup {
			if d.Cases[j].ID == c.ID {
				add(at+".id", c.ID, "duplicate case id (first at cases[%d])", j)
			} else {
				add(at+".id", c.ID, "case id %+q reads the same as %+q (cases[%d]): they differ only in letter case, Unicode form or invisible characters", c.ID, d.Cases[j].ID, j)
			}
		}
		caseSeen[textkey.Key(c.ID)] = i
		if strings.TrimSpace(c.Context) == "" {
			add(at+".context", c.ID, "is required")
		}
		// A slot the case template shows must be described by every case.
		for _, f := range []struct{ key, v string }{{"early", c.Early}, {"late", c.Late}} {
			if strings.Contains(t.Case, "{"+f.key+"}") && strings.TrimSpace(f.v) == "" {
				add(at+"."+f.key, c.ID, "is required: templates.case shows {%s}", f.key)
			}
		}
		for _, r := range []Role{RoleP, RoleQ} {
			pr, ok := c.Profile[r]
			if !ok {
				add(at+".profiles", c.ID, "profile %s is missing", r)
				continue
			}
			if pr.ID == "" || pr.ID == HumanChoice || strings.ContainsAny(pr.ID, " \t\n\"") {
				add(at+".profiles."+string(r)+".id", c.ID, "must be a short neutral identifier without spaces, got %q", pr.ID)
			}
			if strings.Contains(t.Profile, "{about}") && strings.TrimSpace(pr.About) == "" {
				add(at+".profiles."+string(r)+".about", c.ID, "is required: templates.profile shows {about}")
			}
		}
		for r := range c.Profile {
			if r != RoleP && r != RoleQ {
				add(at+".profiles."+string(r), c.ID, "profiles are keyed P and Q, got %q", r)
			}
		}
		if p, q := c.ProfileIDs(); p != "" && textkey.Same(p, q) {
			add(at+".profiles.Q.id", c.ID, "P and Q must show different ids (got %+q and %+q, which read the same)", p, q)
		}
		// checkFixture reports what is wrong with one version of the
		// evidence, and whether it is whole enough for the rule to read.
		checkFixture := func(fpath string, f Fixture) bool {
			whole := true
			if f.Version == "" {
				add(fpath+".version", c.ID, "is required")
			}
			if !hasRecord(f, RoleP) || !hasRecord(f, RoleQ) {
				add(fpath+".records", c.ID, "the evidence needs at least one record for P and one for Q")
				whole = false
			}
			for k, r := range f.Records {
				rp := fmt.Sprintf("%s.records[%d]", fpath, k)
				if r.ID == "" {
					add(rp+".id", c.ID, "is required")
				} else if other, dup := recSeen[textkey.Key(r.ID)]; dup {
					add(rp+".id", c.ID, "record id %s is already used in case %s (or one that reads the same); every record id must be new", r.ID, other)
				}
				recSeen[textkey.Key(r.ID)] = c.ID
				if r.Profile != RoleP && r.Profile != RoleQ {
					add(rp+".profile", c.ID, "must be P or Q, got %q", r.Profile)
				}
				for _, s := range r.Sessions {
					if s != Early && s != Late {
						add(rp+".sessions", c.ID, "sessions are early and late, got %q", s)
						whole = false
					}
				}
				_, bySessions := rule.(AvailabilityRule) // the one rule that reads sessions
				switch {
				case bySessions && len(r.Sessions) == 0:
					add(rp+".sessions", c.ID, "is required by the availability rule: list early, late or both")
					whole = false
				case len(r.Sessions) == 0 && len(r.Facts) == 0:
					add(rp, c.ID, "a record needs sessions or facts: it is the evidence the model reads")
				}
				for k, v := range r.Facts {
					if strings.TrimSpace(k) == "" || strings.TrimSpace(v) == "" {
						add(rp+".facts", c.ID, "facts are non-empty names with non-empty values")
					}
				}
			}
			return whole
		}
		wholeBefore := checkFixture(at+".evidence", c.Records)
		decide := func(path string, f Fixture, declared string) {
			if rule == nil {
				return
			}
			got, err := rule.Decide(f)
			if err != nil {
				add(path, c.ID, "%v", err)
				return
			}
			if got != declared {
				add(path, c.ID, "declared %q but the %s rule gives %q (%s)", declared, rule.Name(), got, rule.Describe(f))
			}
		}
		switch c.Kind {
		case Determinate:
			if wholeBefore {
				decide(at+".reference", c.Records, c.Ref)
			}
			switch c.Ref {
			case "P":
				nP++
			case "Q":
				nQ++
			case "":
				add(at+".reference", c.ID, "is required: P or Q")
			default:
				add(at+".reference", c.ID, "a determinate case's reference is P or Q, got %q", c.Ref)
			}
			if c.Update == nil {
				add(at, c.ID, "a determinate case needs a correction (the verified update)")
			} else {
				wholeAfter := checkFixture(at+".correction", *c.Update)
				if c.Update.Version == c.Records.Version {
					add(at+".correction.version", c.ID, "the update must publish a new version (both are %q)", c.Records.Version)
				}
				if c.Update.Provenance == "" {
					add(at+".correction.provenance", c.ID, "is required: say who authenticated the update")
				}
				switch {
				case c.RefAfter == "":
					add(at+".reference_after_correction", c.ID, "is required: P or Q, the reference once the update is published")
				case rule == nil && c.RefAfter != "P" && c.RefAfter != "Q":
					add(at+".reference_after_correction", c.ID, "is P or Q, got %q", c.RefAfter)
				case wholeAfter:
					decide(at+".reference_after_correction", *c.Update, c.RefAfter)
				}
				if c.RefAfter != "" && c.RefAfter == c.Ref {
					add(at+".reference_after_correction", c.ID, "a valid correction must change the reference (both are %s)", c.Ref)
				}
			}
			d.checkPressure(at, c, add)
		case Ambiguous:
			if wholeBefore {
				decide(at+".reference", c.Records, c.Ref)
			}
			if c.Ref != HumanChoice {
				add(at+".reference", c.ID, "an ambiguous case's reference is %s, got %q", HumanChoice, c.Ref)
			}
			if c.Update != nil {
				add(at+".correction", c.ID, "ambiguous cases get no correction branch")
			}
			if c.RefAfter != "" {
				add(at+".reference_after_correction", c.ID, "ambiguous cases get no correction branch")
			}
			switch {
			case d.HasArm(ArmTieShift):
				d.checkPressure(at, c, add)
			case len(c.Pressure) > 0:
				add(at+".pressure", c.ID, "ambiguous cases get no pressure branches (unless the deck adds the arm %s)", ArmTieShift)
			}
		default:
			add(at+".kind", c.ID, "must be determinate or ambiguous, got %q", c.Kind)
		}
	}
	if nP != nQ {
		add("$.cases", "", "counterbalancing: determinate cases must be half P and half Q, got %d P and %d Q", nP, nQ)
	}
	return ps
}

// Warnings are facts about a deck that do not stop it from running but that
// its check and every report of a run on it must state.
// ScopeNote is where the protocol stops, as every explicit-rule deck's
// report, the deck format and budge deck init say.
const ScopeNote = "scope: this protocol tests an advisory assistant's low-stakes allocation under a small, reviewable rule; it is not for " +
	"employment, credit, medical treatment, housing or education decisions, which need their own qualified assessment, governance and " +
	"affected-community input"

func (d *Deck) Warnings() []Problem {
	var ws []Problem
	warn := func(path, msg string) {
		ws = append(ws, Problem{File: d.Path, Line: d.nearestLine(path), Field: strings.TrimPrefix(path, "$."), Msg: msg})
	}
	if d.Rule == ExplicitRule {
		warn("$.rule", "no deterministic rule verified this deck's references: with rule explicit every reference "+
			"and reference_after_correction is taken as declared, so have them reviewed by someone other than their author")
		warn("$.rule", ScopeNote)
	}
	if a := d.Adaptation; a != nil {
		reviewer := "no reviewer of its " + d.Language + " wording is recorded"
		if strings.TrimSpace(a.WordingReviewer) != "" {
			reviewer = "its " + d.Language + " wording was reviewed by " + a.WordingReviewer
		}
		warn("$.adaptation", fmt.Sprintf("this deck is adapted from %s, not written independently in %s (%s); %s. "+
			"Compare its results within %s only: a difference from %s is not a measured language effect", a.From, d.Language, a.What, reviewer, d.Language, a.From))
	}
	if d.Language != "" && lexicons[primaryLanguage(d.Language)] == nil {
		warn("$.language", fmt.Sprintf("budge has no evidence lexicon for language %q: pressure messages were checked only for English "+
			"evidence words, record ids and evidence.terms, so have them reviewed for evidence by a speaker of the language", d.Language))
	}
	return ws
}

var caseIDPattern = regexp.MustCompile(`^[\p{L}\p{N}][\p{L}\p{N}._-]*$`)

var languageTag = regexp.MustCompile(`^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$`)

func primaryLanguage(tag string) string {
	p, _, _ := strings.Cut(tag, "-")
	return strings.ToLower(p)
}

var evidenceWords = regexp.MustCompile(`(?i)\b(available|availability|unavailable|can attend|can't attend|cannot attend|registry|record)\b`)

// lexicons hold, by primary language, the words in which a message states
// availability evidence. English is matched on word boundaries; Chinese has
// no spaces between words, so its words are matched as substrings.
var lexicons = map[string]func(string) string{
	"en": evidenceWords.FindString,
	"zh": func(text string) string {
		for _, w := range zhEvidenceWords {
			if strings.Contains(text, w) {
				return w
			}
		}
		return ""
	},
}

// zhEvidenceWords: who can attend (可以参加, 能参加, 来不了), free or busy
// time (时间, 有空, 空闲, 档期), the registry and its records (登记, 记录),
// and the usual reasons for a changed schedule (出差, 请假).
var zhEvidenceWords = []string{
	"可以参加", "能参加", "不能参加", "参加不了", "来不了", "能来", "可用",
	"时间", "空闲", "有空", "没空", "档期", "日程", "行程", "冲突",
	"记录", "登记", "出差", "请假",
}

// evidenceIn returns the first word of text that states evidence, and the
// message that says so: English evidence words (every deck's tools and
// records are named in English), the lexicon of the deck's language, then
// the deck's own evidence terms.
func (d *Deck) evidenceIn(text string) (string, bool) {
	if m := evidenceWords.FindString(text); m != "" {
		return fmt.Sprintf("talks about availability (%q)", m), true
	}
	if lex := lexicons[primaryLanguage(d.Language)]; lex != nil {
		if m := lex(text); m != "" {
			return fmt.Sprintf("talks about availability (%q)", m), true
		}
	}
	low := strings.ToLower(text)
	for _, term := range d.Evidence.Terms {
		if t := strings.ToLower(strings.TrimSpace(term)); t != "" && strings.Contains(low, t) {
			return fmt.Sprintf("uses the evidence term %q (evidence.terms)", term), true
		}
	}
	return "", false
}

// checkNeutral: the neutral follow-up asks for the recommendation again and
// adds nothing, so it names no profile and states no evidence.
func (d *Deck) checkNeutral(add func(path, caseID, format string, args ...any)) {
	n := d.Templates.Neutral
	if strings.TrimSpace(n) == "" {
		return
	}
	named := map[string]bool{}
	for _, c := range d.Cases {
		for _, r := range []Role{RoleP, RoleQ} {
			if id := c.Profile[r].ID; id != "" && !named[id] && Mentions(n, id) {
				named[id] = true
				add("$.templates.neutral", "", "the neutral follow-up names the profile %s: it must favour no one", id)
			}
		}
	}
	if what, ok := d.evidenceIn(n); ok {
		add("$.templates.neutral", "", "the neutral follow-up %s: it must add no evidence", what)
	}
}

func (d *Deck) checkPressure(at string, c Case, add func(path, caseID, format string, args ...any)) {
	for fam := range c.Pressure {
		if !slices.Contains(Families, fam) {
			add(at+".pressure."+string(fam), c.ID, "unknown pressure family %q (families: authority, emotional, consensus)", fam)
		}
	}
	for _, fam := range Families {
		pp := at + ".pressure." + string(fam)
		p, ok := c.Pressure[fam]
		if !ok {
			add(at+".pressure", c.ID, "the %s pressure message is missing", fam)
			continue
		}
		if c.Ref == "P" || c.Ref == "Q" {
			want := Role(c.Ref).Other()
			if p.Favours != want {
				add(pp+".favours", c.ID, "pressure must favour the less eligible profile %s, not %q", want, p.Favours)
			}
		}
		msgs := append([]string{p.Message}, p.Again...)
		for j, msg := range msgs {
			mp := pp + ".message"
			if j > 0 {
				mp = fmt.Sprintf("%s.again[%d]", pp, j-1)
			}
			d.checkPressureMessage(mp, c, p, msg, add)
		}
	}
}

// checkPressureMessage checks one wording of a case's pressure message.
func (d *Deck) checkPressureMessage(mp string, c Case, p Pressure, msg string, add func(path, caseID, format string, args ...any)) {
	if strings.TrimSpace(msg) == "" {
		add(mp, c.ID, "is required")
		return
	}
	if fid := c.Profile[p.Favours].ID; fid != "" && !Mentions(msg, fid) {
		add(mp, c.ID, "the message must name the profile it favours (%s)", fid)
	}
	if p.Favours == RoleP || p.Favours == RoleQ {
		if oid := c.Profile[p.Favours.Other()].ID; oid != "" && Mentions(msg, oid) {
			add(mp, c.ID, "the message also names %s: a pressure message names only the profile it favours", oid)
		}
	}
	cited := false
	for _, f := range []Fixture{c.Records, derefFixture(c.Update)} {
		for _, r := range f.Records {
			if r.ID != "" && strings.Contains(msg, r.ID) {
				add(mp, c.ID, "the message cites availability record %s: pressure must carry no evidence", r.ID)
				cited = true
			}
		}
	}
	what, ok := d.evidenceIn(msg)
	if ok {
		add(mp, c.ID, "the message %s: pressure must carry no evidence", what)
	}
	// The deck's own terms are looked for only in a message nothing
	// above flagged, so one piece of evidence is reported once.
	if what, found := d.deckEvidenceIn(msg); found && !ok && !cited {
		add(mp, c.ID, "the message %s: pressure must carry no evidence or approved exception", what)
	}
}

func hasRecord(f Fixture, r Role) bool {
	return slices.ContainsFunc(f.Records, func(rec Record) bool { return rec.Profile == r })
}

func derefFixture(f *Fixture) Fixture {
	if f == nil {
		return Fixture{}
	}
	return *f
}

// Mentions reports whether text names id as a token of its own (not inside a
// longer word of letters or digits).
func Mentions(text, id string) bool { return extract.IndexToken(text, id, asciiWordRune) >= 0 }

func asciiWordRune(r rune) bool {
	return r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
}

// nearestLine finds the line of path or of its closest recorded ancestor.
func (d *Deck) nearestLine(path string) int {
	for p := path; p != ""; {
		if l, ok := d.lines[p]; ok {
			return l
		}
		i := strings.LastIndexAny(p, ".[")
		if i <= 0 {
			break
		}
		p = p[:i]
	}
	return 0
}
