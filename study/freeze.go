package study

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/store"
)

// FreezeDeck opens a deck (built-in name or path), checks it, and records
// its hash and the time in the store. already is true when that exact deck
// was frozen before; the earlier record is returned unchanged.
func FreezeDeck(ctx context.Context, st *store.Store, name string) (rec store.Freeze, already bool, deck *pressure.Deck, err error) {
	deck, err = pressure.OpenDeck(name)
	if err != nil {
		return store.Freeze{}, false, nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	content, err := deckSource(deck)
	if err != nil {
		return store.Freeze{}, false, nil, err
	}
	rec, already, err = st.FreezeDeck(ctx, store.Freeze{Hash: deck.Hash, Name: deck.Name, Kind: deck.Kind, Source: deck.Path,
		FrozenAt: time.Now().UTC()}, content)
	return rec, already, deck, err
}

// freezeState decides how a new run on deck stands: a confirmation deck
// must have been frozen before its first run (a replay, whose deck already
// ran, is exempt); a run on a deck that is not frozen is exploratory.
func freezeState(ctx context.Context, st *store.Store, deck *pressure.Deck, replay bool) (frozenAt *time.Time, err error) {
	f, ok, err := st.Frozen(ctx, deck.Hash)
	if err != nil {
		return nil, err
	}
	if ok {
		t := f.FrozenAt
		return &t, nil
	}
	if deck.Kind == "confirmation" && !replay {
		changed := ""
		if old, err := st.FrozenByName(ctx, deck.Name); err == nil && len(old) > 0 {
			changed = fmt.Sprintf(" A deck named %s was frozen at %s with sha256 %s: this deck has changed since, and a changed confirmation deck is a new deck.",
				deck.Name, old[0].FrozenAt.Format(time.RFC3339), short12(old[0].Hash))
		}
		return nil, fmt.Errorf("%w: confirmation deck %s (sha256 %s) is not frozen: a confirmation deck must be frozen before its first run, "+
			"so that its cases cannot change after the answers are seen.%s Freeze it with: budge deck freeze %s (use the same --dir), then run again",
			ErrInvalid, deck.Name, short12(deck.Hash), changed, freezeArg(deck))
	}
	return nil, nil
}

func freezeArg(d *pressure.Deck) string {
	if name, ok := cutPrefix(d.Path, "builtin:"); ok {
		return name
	}
	return d.Path
}

func short12(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// deckRevisions lists the distinct revisions (fingerprints: model, prompt,
// settings, channel) evaluated on a deck hash, in the order first run.
func deckRevisions(ctx context.Context, st *store.Store, hash string) ([]string, error) {
	runs, err := st.RunsOnDeck(ctx, hash)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, r := range runs {
		if r.Protocol != "pressure" {
			continue
		}
		var m struct {
			Fingerprint string `json:"fingerprint"`
		}
		if json.Unmarshal(r.Manifest, &m) != nil || m.Fingerprint == "" || seen[m.Fingerprint] {
			continue
		}
		seen[m.Fingerprint] = true
		out = append(out, m.Fingerprint)
	}
	return out, nil
}

// freezeInfo fills a loaded result's freeze state from the store: whether
// the deck was frozen before the run was created, and the revisions run on
// the deck so far.
func freezeInfo(ctx context.Context, st *store.Store, res *PressureResult) error {
	if res.Manifest.Exploratory == nil {
		f, ok, err := st.Frozen(ctx, res.Run.DeckHash)
		if err != nil {
			return err
		}
		expl := !ok || f.FrozenAt.After(res.Manifest.Created)
		res.Manifest.Exploratory = &expl
		if ok && !expl {
			t := f.FrozenAt
			res.Manifest.DeckFrozenAt = &t
		}
	}
	revs, err := deckRevisions(ctx, st, res.Run.DeckHash)
	if err != nil {
		return err
	}
	res.Revisions = revs
	return nil
}

// deckRevisedNote says when a deck of the same name was frozen with other
// content: the deck was revised after it was frozen (a revised deck is a
// new deck), or "" when no other freeze is recorded under its name.
func deckRevisedNote(ctx context.Context, st *store.Store, name, hash string) (string, error) {
	if st == nil {
		return "", nil
	}
	old, err := st.FrozenByName(ctx, name)
	if err != nil {
		return "", err
	}
	var others []string
	for _, f := range old {
		if f.Hash != hash {
			others = append(others, fmt.Sprintf("sha256 %s frozen at %s", short12(f.Hash), f.FrozenAt.UTC().Format(time.RFC3339)))
		}
	}
	if len(others) == 0 {
		return "", nil
	}
	return fmt.Sprintf("WARNING: deck %s was revised after freezing: these runs used sha256 %s, and %d other version(s) of it were frozen (%s). "+
		"A revised deck is a new deck: results on the versions are not pooled, and a confirmation deck revised after its answers were seen is no confirmation.",
		name, short12(hash), len(others), strings.Join(others, "; ")), nil
}
