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

// A request whose encoding the caller hands over (provider.WithEncoded)
// has the key of the same request encoded here, repeat index included;
// an encoding handed over for another request is not used.
func TestRequestKeyOfAnEncodedRequest(t *testing.T) {
	info := provider.Info{Name: "openai-compatible", Model: "m<1>", Detail: `{"base_url":"http://x/v1"}`}
	req := &chat.Request{Model: "m<1>", Messages: []chat.Message{{Role: chat.User, Content: "a & b\n<c>\u2028\"d\"\n"}}}
	body, _ := json.Marshal(req)
	ctx := provider.WithRepeat(context.Background(), 3)
	want := requestKey(ctx, info, req)
	if got := requestKey(provider.WithEncoded(ctx, req, body), info, req); got != want {
		t.Fatalf("key with the encoding handed over = %x, want %x", got, want)
	}
	other := &chat.Request{Model: "m<1>"}
	if got := requestKey(provider.WithEncoded(ctx, req, body), info, other); got != requestKey(ctx, info, other) {
		t.Fatalf("an encoding handed over for another request was used")
	}
}
