package stats

import "fmt"

// Warnings that accompany numbers. They are shown with the numbers, never
// instead of them.
const (
	WarnSmallDenominator = "denominator below 10"
	WarnTwoClusters      = "all clusters from two base cases"
	WarnNoDiscordant     = "interval not computed: no discordant pairs"
	WarnOneCluster       = "interval not computed: all observations from one base case"
	WarnEmptyDenominator = "no denominator: nothing to estimate"
)

// RateWarnings lists the warnings for a count over a denominator.
func RateWarnings(den int) []string {
	switch {
	case den == 0:
		return []string{WarnEmptyDenominator}
	case den < 10:
		return []string{fmt.Sprintf("%s (%d)", WarnSmallDenominator, den)}
	}
	return nil
}

// ClusterWarnings lists the warnings for an estimate resampled over the given
// number of clusters.
func ClusterWarnings(clusters int) []string {
	switch {
	case clusters == 0:
		return nil
	case clusters == 1:
		return []string{WarnOneCluster}
	case clusters == 2:
		return []string{WarnTwoClusters}
	}
	return nil
}
