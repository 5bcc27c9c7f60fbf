package experiment

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/buildlab/budge/store"
)

func TestSmoke(t *testing.T) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	o := DefaultPressureOptions()
	res, err := RunPressure(context.Background(), st, o)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(res.Summary, "", " ")
	t.Logf("%s", b)
	t.Logf("%+v", res.Manifest.Counts)
}
