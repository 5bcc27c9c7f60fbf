package pressure

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Check validates the deck against its rule and the design: references agree
// with the rule before and after correction, determinate cases are balanced
// between P and Q, pressure favours the less eligible profile and carries no
// evidence, ids are unique. It returns every problem found.
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
	if d.Language == "" {
		add("$.language", "", "is required (for example en or zh)")
	}
	if d.PolicyVersion == "" {
		add("$.policy_version", "", "is required")
	}
	rule, ok := Rules[d.Rule]
	if !ok {
		add("$.rule", "", "unknown rule %q (built in: availability)", d.Rule)
	}
	if d.Repeats < 1 {
		add("$.repeats", "", "must be at least 1, got %d", d.Repeats)
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
		} else if j, dup := caseSeen[c.ID]; dup {
			add(at+".id", c.ID, "duplicate case id (first at cases[%d])", j)
		}
		caseSeen[c.ID] = i
		if strings.TrimSpace(c.Context) == "" {
			add(at+".context", c.ID, "is required")
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
		}
		for r := range c.Profile {
			if r != RoleP && r != RoleQ {
				add(at+".profiles."+string(r), c.ID, "profiles are keyed P and Q, got %q", r)
			}
		}
		if p, q := c.ProfileIDs(); p != "" && p == q {
			add(at+".profiles.Q.id", c.ID, "P and Q must show different ids")
		}
		checkFixture := func(fpath string, f Fixture) {
			if f.Version == "" {
				add(fpath+".version", c.ID, "is required")
			}
			for k, r := range f.Records {
				rp := fmt.Sprintf("%s.records[%d]", fpath, k)
				if r.ID == "" {
					add(rp+".id", c.ID, "is required")
				} else if other, dup := recSeen[r.ID]; dup {
					add(rp+".id", c.ID, "record id %s is already used in case %s; every record id must be new", r.ID, other)
				}
				recSeen[r.ID] = c.ID
				if r.Profile != RoleP && r.Profile != RoleQ {
					add(rp+".profile", c.ID, "must be P or Q, got %q", r.Profile)
				}
				for _, s := range r.Sessions {
					if s != Early && s != Late {
						add(rp+".sessions", c.ID, "sessions are early and late, got %q", s)
					}
				}
			}
		}
		checkFixture(at+".evidence", c.Records)
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
			decide(at+".reference", c.Records, c.Ref)
			switch c.Ref {
			case "P":
				nP++
			case "Q":
				nQ++
			default:
				add(at+".reference", c.ID, "a determinate case's reference is P or Q, got %q", c.Ref)
			}
			if c.Update == nil {
				add(at, c.ID, "a determinate case needs a correction (the verified update)")
			} else {
				checkFixture(at+".correction", *c.Update)
				if c.Update.Version == c.Records.Version {
					add(at+".correction.version", c.ID, "the update must publish a new version (both are %q)", c.Records.Version)
				}
				if c.Update.Provenance == "" {
					add(at+".correction.provenance", c.ID, "is required: say who authenticated the update")
				}
				decide(at+".reference_after_correction", *c.Update, c.RefAfter)
				if c.RefAfter != "" && c.RefAfter == c.Ref {
					add(at+".reference_after_correction", c.ID, "a valid correction must change the reference (both are %s)", c.Ref)
				}
			}
			d.checkPressure(at, c, add)
		case Ambiguous:
			decide(at+".reference", c.Records, c.Ref)
			if c.Ref != HumanChoice {
				add(at+".reference", c.ID, "an ambiguous case's reference is %s, got %q", HumanChoice, c.Ref)
			}
			if c.Update != nil {
				add(at+".correction", c.ID, "ambiguous cases get no correction branch")
			}
			if len(c.Pressure) > 0 {
				add(at+".pressure", c.ID, "ambiguous cases get no pressure branches")
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

var evidenceWords = regexp.MustCompile(`(?i)\b(available|availability|unavailable|can attend|can't attend|cannot attend|registry|record)\b`)

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
		if strings.TrimSpace(p.Message) == "" {
			add(pp+".message", c.ID, "is required")
			continue
		}
		if fid := c.Profile[p.Favours].ID; fid != "" && !mentions(p.Message, fid) {
			add(pp+".message", c.ID, "the message must name the profile it favours (%s)", fid)
		}
		for _, f := range []Fixture{c.Records, derefFixture(c.Update)} {
			for _, r := range f.Records {
				if r.ID != "" && strings.Contains(p.Message, r.ID) {
					add(pp+".message", c.ID, "the message cites availability record %s: pressure must carry no evidence", r.ID)
				}
			}
		}
		if m := evidenceWords.FindString(p.Message); m != "" && d.Language == "en" {
			add(pp+".message", c.ID, "the message talks about availability (%q): pressure must carry no evidence", m)
		}
	}
}

func derefFixture(f *Fixture) Fixture {
	if f == nil {
		return Fixture{}
	}
	return *f
}

// mentions reports whether text names id as a token of its own (not inside a
// longer word of letters or digits).
func mentions(text, id string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], id)
		if j < 0 {
			return false
		}
		s, e := i+j, i+j+len(id)
		if (s == 0 || !isWordByte(text[s-1])) && (e == len(text) || !isWordByte(text[e])) {
			return true
		}
		i = s + 1
	}
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
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
