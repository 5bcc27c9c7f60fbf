package dataset

import (
	"fmt"

	"github.com/buildlab/budge/framing"
)

// Helpers only the tests use, kept out of the production code.

// CheckStratify refuses a stratification field that no item has, naming
// the fields the items do have: a misspelt field would otherwise put every
// item in one stratum and sample without stratifying, silently.
func CheckStratify(items []framing.Item, field string) error {
	return checkField(items, field, fmt.Sprintf("--stratify %q", field))
}
