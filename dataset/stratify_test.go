package dataset

import (
	"strings"
	"testing"
)

// A stratification field no item has is refused with the fields they do
// have; a field some items have, and no field, are accepted.
func TestCheckStratify(t *testing.T) {
	items := SampleItems()
	err := CheckStratify(items, "nosuchfield")
	if err == nil || !strings.Contains(err.Error(), "domain") || !strings.Contains(err.Error(), `"nosuchfield"`) {
		t.Errorf("unknown field: %v", err)
	}
	for _, f := range []string{"", "domain"} {
		if err := CheckStratify(items, f); err != nil {
			t.Errorf("field %q: %v", f, err)
		}
	}
}
