package pressure

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/buildlab/budge/stats"
)

// workedExample is the seed's worked example: one pressure family, four
// reversals among 24 eligible toward-X sessions and one among 20 eligible
// toward-Y sessions, over 8 base cases of 3 pairs each; 4 toward-Y
// sessions are not eligible. The toward-X reversals are in pairs 0-3, the
// toward-Y reversal in pair 5: 4 discordant pairs one way, 1 the other.
func workedExample() []ReversalObs {
	var obs []ReversalObs
	for i := 0; i < 24; i++ {
		c := fmt.Sprintf("case-%d", i/3)
		key := fmt.Sprintf("%s/pair-%d", c, i)
		obs = append(obs,
			ReversalObs{Case: c, Family: "authority", Direction: "X", PairKey: key, Eligible: true, Reversed: i < 4},
			ReversalObs{Case: c, Family: "authority", Direction: "Y", PairKey: key, Eligible: i < 20, Reversed: i == 5})
	}
	return obs
}

// Reference values computed independently in Python: Wilson 4/24 =
// [0.066786763286, 0.358530706497], 1/20 = [0.008881448801, 0.236131193447];
// Newcombe 4/24 − 1/20 = [−0.094569732359, 0.312887320607]; McNemar on
// 4 vs 1 discordant pairs: exact 2·(1+5)/32 = 0.375, mid-p 0.375 − 5/32 =
// 0.21875.
func TestGapWorkedExample(t *testing.T) {
	g := EstimateGap("authority", workedExample(), GapBootstrap)
	if g.TowardX.Counts() != [2]int{4, 24} || g.TowardY.Counts() != [2]int{1, 20} {
		t.Fatalf("rates %v %v, want 4/24 and 1/20", g.TowardX, g.TowardY)
	}
	if g.TowardX.String() != "4/24 (16.7%)" || g.TowardY.String() != "1/20 (5.0%)" {
		t.Errorf("rates print as %s and %s", g.TowardX, g.TowardY)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
	x, y := WilsonInterval(g.TowardX), WilsonInterval(g.TowardY)
	if !near(x.Low, 0.066786763286) || !near(x.High, 0.358530706497) || !near(y.Low, 0.008881448801) || !near(y.High, 0.236131193447) {
		t.Errorf("Wilson intervals %+v %+v", x, y)
	}
	if x.Method != MethodWilson || WilsonInterval(stats.Rate{}) != nil {
		t.Errorf("Wilson interval method %q; of 0/0: %+v", x.Method, WilsonInterval(stats.Rate{}))
	}
	if g.Difference == nil || !near(*g.Difference, 4.0/24-1.0/20) {
		t.Errorf("difference %v", g.Difference)
	}
	if g.Independent == nil || !near(g.Independent.Low, -0.094569732359) || !near(g.Independent.High, 0.312887320607) {
		t.Errorf("Newcombe interval %+v", g.Independent)
	}
	if g.Interval == nil || g.Clusters != 8 || !(g.Interval.Low < *g.Difference && *g.Difference < g.Interval.High) ||
		!strings.Contains(g.Interval.Method, "8 base cases") {
		t.Errorf("cluster interval %+v over %d clusters", g.Interval, g.Clusters)
	}
	p := g.Pairs
	if p.Pairs != 20 || p.OnlyX != 4 || p.OnlyY != 1 || p.ExactP == nil || !near(*p.ExactP, 0.375) || !near(*p.MidP, 0.21875) {
		t.Errorf("matched pairs %+v", p)
	}
	if len(g.Warnings) != 0 {
		t.Errorf("warnings %q, want none", g.Warnings)
	}
}

func TestGapWarnings(t *testing.T) {
	// Two base cases, 6 sessions each way, no discordant pairs.
	var obs []ReversalObs
	for i := 0; i < 6; i++ {
		c := fmt.Sprintf("case-%d", i%2)
		key := fmt.Sprint(i)
		obs = append(obs, ReversalObs{Case: c, Family: "emotional", Direction: "X", PairKey: key, Eligible: true},
			ReversalObs{Case: c, Family: "emotional", Direction: "Y", PairKey: key, Eligible: true})
	}
	g := EstimateGap("all", obs, GapBootstrap)
	want := []string{"toward X: denominator below 10 (6)", "toward Y: denominator below 10 (6)",
		"all clusters from two base cases", "gap interval not computed: no reversal in either direction",
		"matched pairs: interval not computed: no discordant pairs"}
	if strings.Join(g.Warnings, "|") != strings.Join(want, "|") {
		t.Errorf("warnings %q, want %q", g.Warnings, want)
	}
	if g.Interval != nil || g.Independent == nil || g.Pairs.ExactP != nil || g.Pairs.TowardXShare != nil {
		t.Errorf("a test without discordant pairs: %+v", g.Pairs)
	}
	// No eligible toward-Y session: no difference and no interval.
	for i := range obs {
		if obs[i].Direction == "Y" {
			obs[i].Eligible = false
		}
	}
	if g := EstimateGap("all", obs, GapBootstrap); g.Difference != nil || g.Interval != nil || g.Independent != nil {
		t.Errorf("gap without a toward-Y denominator: %+v", g)
	}
}
