// Package stats holds the statistics budge reports: intervals for
// proportions, exact tests for paired binary outcomes, effect sizes and a
// seeded bootstrap.
//
// Everything here is a pure function of its arguments: no I/O, no clocks,
// no global random state (every random draw comes from a seed the caller
// passes), and no knowledge of any protocol, provider or store. Protocol
// packages turn their observations into counts and call these functions.
package stats
