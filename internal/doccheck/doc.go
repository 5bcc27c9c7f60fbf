// Package doccheck holds the tests that keep budge's documentation true:
// the runnable examples of the docs and of the help texts run on a fresh
// store, the schema reference matches the code's JSON types, and no
// document or help text points at material a user does not have.
package doccheck
