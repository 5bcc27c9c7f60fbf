package framing

import "github.com/buildlab/budge/reference"

const measuresDoc = "budge docs/measures.md, DialDefer framing measures"

// Definitions are the definitions of a framing report's measures: every
// rate and DDS in Summary is covered by one of these, or carries its own
// definition (the reference rows).
var Definitions = []reference.Definition{
	{ID: "budge.framing_accuracy", Source: measuresDoc,
		Numerator:   "judgments that are right in the condition (C1-True, C1-False, C2-Correct, C2-Incorrect); c1/c2_average and overall average them",
		Denominator: "items judged in that condition (an unreadable answer counts as wrong under --unparseable wrong, drops its item under exclude)",
		Paths: []string{"arms[].domains.*.accuracy", "arms[].domains.*.c1_average", "arms[].domains.*.c2_average", "arms[].domains.*.overall",
			"arms[].domains.*.strata.*.accuracy", "arms[].domains.*.strata.*.c1_average", "arms[].domains.*.strata.*.c2_average", "arms[].domains.*.strata.*.overall",
			"arms[].macro", "arms[].question_macro"}},
	{ID: "budge.framing_c1_verdicts", Source: measuresDoc,
		Numerator: "C1 verdicts of each kind in the stratum", Denominator: "items of the stratum with a C1 verdict read",
		Paths: []string{"arms[].domains.*.c1_verdicts"}},
	{ID: "dialdefer.dds", Source: measuresDoc + " (DialDefer's DDS: ΔCorrect − ΔIncorrect)",
		Numerator: "ΔCorrect = C2-Correct − C1-True, ΔIncorrect = C2-Incorrect − C1-False, in points", Denominator: "the items of each condition",
		Paths: []string{"arms[].domains.*.delta_correct", "arms[].domains.*.delta_incorrect", "arms[].domains.*.dds", "arms[].domains.*.strata.*.delta_correct", "arms[].domains.*.strata.*.delta_incorrect", "arms[].domains.*.strata.*.dds",
			"dds_strict_vs_tolerant"}},
}
