package cli

import "strings"

// unwrapped is a text report with its line wrapping undone (every run of
// blanks one space), for tests that look for a phrase the 100-column text
// report may have broken across lines.
func unwrapped(s string) string { return strings.Join(strings.Fields(s), " ") }
