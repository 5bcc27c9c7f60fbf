package sim_test

import (
	"context"
	"strings"
	"testing"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider/openai"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/testkit/providertest"
)

// oracleRequest is a request after the registry was read: records R-1 (P-1)
// and R-2, which say nothing of who can attend what, so only the
// answer key decides.
func oracleRequest() *chat.Request {
	req := providertest.Request()
	req.Messages = req.Messages[:4]
	req.Messages[3].Content = `{"version":"v1","records":[{"record_id":"R-1","profile":"P-1"},{"record_id":"R-2","profile":"Q-1"}]}`
	return req
}

// TestServerServesTheOracle: started with an answer key, the server serves
// sim:oracle, answering as sim:oracle does in process, and lists it; the
// same request to the default simulator, which has no rule for these
// records, asks for a human choice.
func TestServerServesTheOracle(t *testing.T) {
	key := map[string]string{"R-1": "Q-1", "R-2": "Q-1"}
	_, url := serve(t, sim.ServerOptions{Oracle: key})
	p, err := openai.New(openai.Config{Name: "openai-compatible", Model: "sim:oracle", BaseURL: url + "/v1", Tools: true})
	if err != nil {
		t.Fatal(err)
	}
	want, err := sim.NewOracle(key).Chat(context.Background(), oracleRequest())
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Chat(context.Background(), oracleRequest())
	if err != nil {
		t.Fatal(err)
	}
	if got.Message.Content != want.Message.Content || !strings.Contains(got.Message.Content, `"Q-1"`) {
		t.Errorf("over HTTP %q\nin process %q", got.Message.Content, want.Message.Content)
	}
	plain, err := client(t, url).Chat(context.Background(), oracleRequest())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.Message.Content, `"Q-1"`) || !strings.Contains(plain.Message.Content, "needs-human-choice") {
		t.Errorf("sim answered %q, want a human choice: it has no rule for these records", plain.Message.Content)
	}
	if code, body := get(t, url+"/v1/models"); code != 200 || !strings.Contains(body, `"sim:oracle"`) {
		t.Errorf("models: %d %s", code, body)
	}
}

// TestServerWithoutKeyRefusesTheOracle: without an answer key no request
// reaches sim:oracle; the 404 says how to serve it, and the model list
// leaves it out.
func TestServerWithoutKeyRefusesTheOracle(t *testing.T) {
	_, url := serve(t, sim.ServerOptions{})
	code, body := post(t, url, `{"model":"sim:oracle","messages":[{"role":"user","content":"hi"}]}`)
	if code != 404 || !strings.Contains(body, "model_not_found") || !strings.Contains(body, "--oracle-deck") {
		t.Errorf("sim:oracle without a key: %d %s", code, body)
	}
	if code, body := get(t, url+"/v1/models"); code != 200 || strings.Contains(body, "oracle") {
		t.Errorf("models: %d %s", code, body)
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	return call(t, "GET", url, "", nil)
}
