package study

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/stats"
	"github.com/buildlab/budge/testkit/storetest"
)

// sharedData is the read-only reference data beside the repository.
const sharedData = "../../shared/data"

func dialdeferDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(sharedData, "dialdefer")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("reference data %s is absent (%v): the DialDefer replication cannot run here; .ci/run requires it", dir, err)
	}
	return dir
}

func readCSVRows(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			m[h] = r[i]
		}
		out = append(out, m)
	}
	return out
}

func num(t *testing.T, row map[string]string, col string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(row[col], 64)
	if err != nil {
		t.Fatalf("summary column %s = %q: %v", col, row[col], err)
	}
	return v
}

// TestReplicateDialDeferGPT4oMini imports the paper's released per-item
// outputs of gpt-4o-mini and checks budge's own measures against the
// paper's summary CSVs: accuracies, deltas and DDS to 1e-9, McNemar
// p-values to 1e-9 relative, Cohen's h to 1e-9, bootstrap interval bounds
// within 1.0 percentage point, and the r/AIO breakdown likewise.
func TestReplicateDialDeferGPT4oMini(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(dialdeferDir(t), "results", "gpt-4o-mini")
	st := storetest.Open(t)
	o := DefaultImportOptions(dir)
	o.Templates = filepath.Join(dialdeferDir(t), "prompts")
	res, err := ImportFraming(context.Background(), st, o)
	if err != nil {
		t.Fatal(err)
	}
	im := res.Manifest.Import
	if im.PromptsChecked != 7496 || im.PromptsIdentical != im.PromptsChecked {
		t.Errorf("prompts byte-identical: %d/%d, want 7496/7496; first mismatches: %v", im.PromptsIdentical, im.PromptsChecked, head(im.PromptMismatches, 3))
	}
	if im.ParserAgrees != im.RepliesParsed || im.RepliesParsed != 7496 {
		t.Errorf("budge's parser agrees with the release on %d/%d replies: %v", im.ParserAgrees, im.RepliesParsed, head(im.ParserDisagrees, 3))
	}
	if res.Summary.Parse.Recovered[framing.RecoverInvalidEscape] == 0 || res.Summary.Parse.Recovered[framing.RecoverField] == 0 {
		t.Errorf("the released replies need repairs (LaTeX escapes, broken JSON); the report shows none: %v", res.Summary.Parse.Recovered)
	}

	// The result files name their domain in the dataset field; the summary
	// names rows after the files.
	domainOf := map[string]string{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	for _, f := range files {
		fh, _ := os.Open(f)
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 64<<20)
		sc.Scan()
		var rec struct{ Dataset string }
		json.Unmarshal(sc.Bytes(), &rec)
		fh.Close()
		prefix, _, _ := strings.Cut(filepath.Base(f), "_gpt-4o-mini")
		domainOf[prefix] = rec.Dataset
	}

	exact := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %.12g, the paper's summary has %.12g", name, got, want)
		}
	}
	rel := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9*math.Abs(want) {
			t.Errorf("%s = %.17g, the paper's summary has %.17g", name, got, want)
		}
	}
	within := func(name string, got *float64, want, tol float64) {
		t.Helper()
		if got == nil || math.Abs(*got-want) > tol {
			t.Errorf("%s = %v, the paper's summary has %.4f (tolerance %.1f pp)", name, got, want, tol)
		}
	}
	checked := 0
	for _, row := range readCSVRows(t, filepath.Join(dir, "gpt_4o_mini_analysis_summary.csv")) {
		prefix, _, _ := strings.Cut(row["Dataset"], "_gpt-4o-mini")
		dom, ok := domainOf[prefix]
		if !ok {
			t.Logf("summary row %s: no per-item results were released; not checked", prefix)
			continue
		}
		c := res.Domain(dom)
		if c == nil {
			t.Errorf("domain %s: budge reports nothing", dom)
			continue
		}
		checked++
		if float64(c.Items) != num(t, row, "N") {
			t.Errorf("%s: %d items, summary N = %s", dom, c.Items, row["N"])
		}
		exact(dom+" C1_True", percent(c.Accuracy[framing.C1True]), num(t, row, "C1_True"))
		exact(dom+" C1_False", percent(c.Accuracy[framing.C1False]), num(t, row, "C1_False"))
		exact(dom+" C2_Correct", percent(c.Accuracy[framing.C2Correct]), num(t, row, "C2_Correct"))
		exact(dom+" C2_Incorrect", percent(c.Accuracy[framing.C2Incorrect]), num(t, row, "C2_Incorrect"))
		exact(dom+" Δ_Correct", c.DeltaCorrect.Value, num(t, row, "Δ_Correct"))
		exact(dom+" Δ_Incorrect", c.DeltaIncorrect.Value, num(t, row, "Δ_Incorrect"))
		exact(dom+" DDS", c.DDS.Value, num(t, row, "DDS"))
		exact(dom+" C1_Avg", percent(c.C1Average), num(t, row, "C1_Avg"))
		exact(dom+" C2_Avg", percent(c.C2Average), num(t, row, "C2_Avg"))
		exact(dom+" Overall", percent(c.Overall), num(t, row, "Overall"))
		exact(dom+" DDS_Mean", c.ItemDDSMean, num(t, row, "DDS_Mean"))
		exact(dom+" DDS_Var", c.ItemDDSVariance, num(t, row, "DDS_Var"))
		rel(dom+" McN_Correct_pval", c.McNemarCorrect.PExact, num(t, row, "McN_Correct_pval"))
		rel(dom+" McN_Incorrect_pval", c.McNemarWrong.PExact, num(t, row, "McN_Incorrect_pval"))
		// The summary's h is C1 minus C2; budge reports C2 minus C1.
		exact(dom+" McN_Correct_h", -c.McNemarCorrect.CohenH, num(t, row, "McN_Correct_h"))
		exact(dom+" McN_Incorrect_h", -c.McNemarWrong.CohenH, num(t, row, "McN_Incorrect_h"))
		within(dom+" DDS_CI_Lo", c.DDS.CILo, num(t, row, "DDS_CI_Lo"), 1.0)
		within(dom+" DDS_CI_Hi", c.DDS.CIHi, num(t, row, "DDS_CI_Hi"), 1.0)
		within(dom+" Δ_Correct_CI_Lo", c.DeltaCorrect.CILo, num(t, row, "Δ_Correct_CI_Lo"), 1.0)
		within(dom+" Δ_Correct_CI_Hi", c.DeltaCorrect.CIHi, num(t, row, "Δ_Correct_CI_Hi"), 1.0)
		within(dom+" Δ_Incorrect_CI_Lo", c.DeltaIncorrect.CILo, num(t, row, "Δ_Incorrect_CI_Lo"), 1.0)
		within(dom+" Δ_Incorrect_CI_Hi", c.DeltaIncorrect.CIHi, num(t, row, "Δ_Incorrect_CI_Hi"), 1.0)
		within(dom+" DDS_SE", c.DDS.SE, num(t, row, "DDS_SE"), 0.25)
	}
	if checked != 7 {
		t.Errorf("checked %d benchmark domains against the summary, want the 7 with released results", checked)
	}

	// r/AIO: the judge is Speaker B (the original poster) judging Speaker A,
	// with the community's verdict about Speaker B inverted.
	aio := readCSVRows(t, filepath.Join(dir, "aio_gpt-4o-mini_speaker_b_judges_speaker_a_analysis.csv"))[0]
	c := res.Domain("aio")
	if c == nil {
		t.Fatal("no aio domain in the report")
	}
	if p := res.Report().Run.Perspective; !strings.Contains(p, "the second speaker (the original poster) judges the first") || !strings.Contains(p, "inverted") {
		t.Errorf("the report's naturalistic perspective is %q", p)
	}
	or, nor := c.Strata["OR"], c.Strata["NOR"]
	if or == nil || nor == nil {
		t.Fatalf("aio strata = %v, want OR and NOR", c.Strata)
	}
	if float64(c.Items) != num(t, aio, "N") || float64(or.Items) != num(t, aio, "N_OR") || float64(nor.Items) != num(t, aio, "N_NOR") {
		t.Errorf("aio items %d (OR %d, NOR %d), summary %s (%s, %s)", c.Items, or.Items, nor.Items, aio["N"], aio["N_OR"], aio["N_NOR"])
	}
	exact("aio C1_True", percent(c.Accuracy[framing.C1True]), num(t, aio, "C1_True"))
	exact("aio C1_False", percent(c.Accuracy[framing.C1False]), num(t, aio, "C1_False"))
	exact("aio C2_Correct", percent(c.Accuracy[framing.C2Correct]), num(t, aio, "C2_Correct"))
	exact("aio C2_Incorrect", percent(c.Accuracy[framing.C2Incorrect]), num(t, aio, "C2_Incorrect"))
	exact("aio Δ_Correct", c.DeltaCorrect.Value, num(t, aio, "Δ_Correct"))
	exact("aio Δ_Incorrect", c.DeltaIncorrect.Value, num(t, aio, "Δ_Incorrect"))
	exact("aio DDS", c.DDS.Value, num(t, aio, "DDS"))
	exact("aio C1_Avg", percent(c.C1Average), num(t, aio, "C1_Avg"))
	exact("aio C2_Avg", percent(c.C2Average), num(t, aio, "C2_Avg"))
	exact("aio Overall", percent(c.Overall), num(t, aio, "Overall"))
	exact("aio DDS_Var", c.ItemDDSVariance, num(t, aio, "DDS_Var"))
	exact("aio DDS_Mean", c.ItemDDSMean, num(t, aio, "DDS_Mean"))
	mc, mw := c.McNemarCorrect, c.McNemarWrong
	exact("aio Flips_True", float64(mc.OnlyC1+mc.OnlyC2), num(t, aio, "Flips_True"))
	exact("aio Flips_True_Pos", float64(mc.OnlyC2), num(t, aio, "Flips_True_Pos"))
	exact("aio Flips_True_Neg", float64(mc.OnlyC1), num(t, aio, "Flips_True_Neg"))
	exact("aio Flips_False", float64(mw.OnlyC1+mw.OnlyC2), num(t, aio, "Flips_False"))
	exact("aio Flips_False_Pos", float64(mw.OnlyC2), num(t, aio, "Flips_False_Pos"))
	exact("aio Flips_False_Neg", float64(mw.OnlyC1), num(t, aio, "Flips_False_Neg"))
	exact("aio Total_Flips", float64(mc.OnlyC1+mc.OnlyC2+mw.OnlyC1+mw.OnlyC2), num(t, aio, "Total_Flips"))
	exact("aio OR_C1_True", percent(or.Accuracy[framing.C1True]), num(t, aio, "OR_C1_True"))
	exact("aio OR_C2_Correct", percent(or.Accuracy[framing.C2Correct]), num(t, aio, "OR_C2_Correct"))
	exact("aio OR_DDS", or.DDS.Value, num(t, aio, "OR_DDS"))
	exact("aio NOR_C1_True", percent(nor.Accuracy[framing.C1True]), num(t, aio, "NOR_C1_True"))
	exact("aio NOR_C2_Correct", percent(nor.Accuracy[framing.C2Correct]), num(t, aio, "NOR_C2_Correct"))
	exact("aio NOR_DDS", nor.DDS.Value, num(t, aio, "NOR_DDS"))
	exact("aio Predicts_NOR_Rate", percent(c.C1Verdicts["NOR"]), num(t, aio, "Predicts_NOR_Rate"))
	// Agreement with the community is C1-True (C2-Correct) accuracy.
	exact("aio C1_Human_Align", percent(c.Accuracy[framing.C1True]), num(t, aio, "C1_Human_Align"))
	exact("aio C2_Human_Align", percent(c.Accuracy[framing.C2Correct]), num(t, aio, "C2_Human_Align"))
	exact("aio Align_Delta", c.DeltaCorrect.Value, num(t, aio, "Align_Delta"))
	exact("aio OR_C1_Align", percent(or.Accuracy[framing.C1True]), num(t, aio, "OR_C1_Align"))
	exact("aio OR_C2_Align", percent(or.Accuracy[framing.C2Correct]), num(t, aio, "OR_C2_Align"))
	exact("aio NOR_C1_Align", percent(nor.Accuracy[framing.C1True]), num(t, aio, "NOR_C1_Align"))
	exact("aio NOR_C2_Align", percent(nor.Accuracy[framing.C2Correct]), num(t, aio, "NOR_C2_Align"))
	exact("aio Flips_Toward_Human", float64(mc.OnlyC2), num(t, aio, "Flips_Toward_Human"))
	exact("aio Flips_Away_Human", float64(mc.OnlyC1), num(t, aio, "Flips_Away_Human"))
	exact("aio Net_Align_Change", float64(mc.OnlyC2-mc.OnlyC1), num(t, aio, "Net_Align_Change"))
	rel("aio McN_True_pval", mc.PExact, num(t, aio, "McN_True_pval"))
	rel("aio McN_False_pval", mw.PExact, num(t, aio, "McN_False_pval"))
	exact("aio McN_True_h", -mc.CohenH, num(t, aio, "McN_True_h"))
	exact("aio McN_False_h", -mw.CohenH, num(t, aio, "McN_False_h"))

	// The imported run is a normal run: it loads back from the store and
	// scores the same.
	again, err := LoadFraming(context.Background(), st, res.Manifest.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := again.Domain("bbq").DDS.Value, res.Domain("bbq").DDS.Value; got != want {
		t.Errorf("reloaded run: bbq DDS %v, imported %v", got, want)
	}
	if again.Manifest.Import == nil || again.Manifest.Import.PromptsIdentical != im.PromptsIdentical {
		t.Errorf("reloaded run lost its import check")
	}
}

// percent is a rate in percent, NaN (which matches no published value) when
// its denominator is empty.
func percent(r stats.Rate) float64 {
	if v, ok := r.Percent(); ok {
		return v
	}
	return math.NaN()
}
