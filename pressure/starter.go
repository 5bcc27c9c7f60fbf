package pressure

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

//go:embed starter/*.yaml
var starters embed.FS

// Files written by InitDeck.
const (
	StarterFile = "deck.yaml"
	SchemaFile  = "deck.schema.json"
)

// StarterLanguages lists the languages of the starting decks.
func StarterLanguages() []string { return yamlNames(starters, "starter") }

// StarterDeck returns the commented starting deck in lang ("" means
// DefaultLanguage). It passes deck check as it is.
func StarterDeck(lang string) ([]byte, error) {
	if lang == "" {
		lang = DefaultLanguage
	}
	b, err := starters.ReadFile("starter/" + strings.ToLower(lang) + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("no starting deck in language %q (there are: %s)", lang, strings.Join(StarterLanguages(), ", "))
	}
	return b, nil
}

// InitDeck writes the starting deck and the deck JSON Schema into dir,
// creating dir if needed, and returns the paths written. It never
// overwrites a file: a deck someone has started editing is worth more than
// a fresh template.
func InitDeck(dir, lang string) ([]string, error) {
	deck, err := StarterDeck(lang)
	if err != nil {
		return nil, err
	}
	files := []struct {
		name string
		data []byte
	}{{StarterFile, deck}, {SchemaFile, Schema()}}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(dir, f.name)); err == nil {
			return nil, fmt.Errorf("%s already exists; budge deck init never overwrites a file", filepath.Join(dir, f.name))
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var written []string
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return written, err
		}
		if _, err := fh.Write(f.data); err != nil {
			fh.Close()
			return written, err
		}
		if err := fh.Close(); err != nil {
			return written, err
		}
		written = append(written, path)
	}
	return written, nil
}
