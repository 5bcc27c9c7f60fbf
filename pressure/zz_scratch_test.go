package pressure

import (
	"fmt"
	"testing"
)

func TestZZScratch(t *testing.T) {
	for _, f := range []string{"bad_reference", "unbalanced", "unknown_fields", "duplicate_case", "duplicate_record", "pressure_favours_eligible", "pressure_evidence", "correction_same_reference", "many_mistakes", "syntax_error"} {
		d, err := OpenDeck("testdata/" + f + ".yaml")
		fmt.Println("==", f, d != nil)
		if ps, ok := err.(Problems); ok {
			for _, p := range ps {
				fmt.Printf("  line=%d field=%q case=%q file=%q msg=%s\n", p.Line, p.Field, p.Case, p.File, p.Msg)
			}
		} else {
			fmt.Println("  err:", err)
		}
	}
}
