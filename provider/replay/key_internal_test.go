package replay

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"testing"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
)

// The key is the sha256 of json.Marshal's encoding, as recorded journals
// and caches have it, for content an encoder would escape too.
func TestRequestKeyIsSHA256OfMarshal(t *testing.T) {
	info := provider.Info{Name: "openai-compatible", Model: "m<1>"}
	req := &chat.Request{Model: "m<1>", Messages: []chat.Message{{Role: chat.User, Content: "a & b\n<c>\u2028\"d\"\n"}}}
	want, _ := json.Marshal(struct {
		Provider provider.Info `json:"provider"`
		Request  *chat.Request `json:"request"`
		Repeat   int           `json:"repeat"`
	}{info, req, 0})
	if got := requestKey(context.Background(), info, req); got != sha256.Sum256(want) {
		t.Fatalf("requestKey = %x, want sha256 of %s", got, want)
	}
}
