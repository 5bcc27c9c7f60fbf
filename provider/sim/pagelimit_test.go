package sim

import (
	"net/http/httptest"
	"testing"
)

// A list of batches takes the page size it is asked for, from 1 to its
// most (100 for OpenAI batches, 1000 for message batches), and 20
// otherwise.
func TestPageLimit(t *testing.T) {
	mosts := []int{100, 1000}
	for query, want := range map[string][2]int{"": {20, 20}, "limit=5": {5, 5}, "limit=100": {100, 100}, "limit=101": {20, 101},
		"limit=1000": {20, 1000}, "limit=1001": {20, 20}, "limit=0": {20, 20}, "limit=-3": {20, 20}, "limit=x": {20, 20}} {
		for i, most := range mosts {
			r := httptest.NewRequest("GET", "/v1/batches?"+query, nil)
			if got := pageLimit(r, most); got != want[i] {
				t.Errorf("pageLimit(%q, %d) = %d, want %d", query, most, got, want[i])
			}
		}
	}
}
