package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// framingAwkward is one kind of awkward judge reply and how framing must
// read it: the same statuses as pressure for refusals and empty replies,
// and the shared extraction's repairs.
type framingAwkward struct {
	name    string
	reply   reply
	status  string
	repairs []string
	strict  bool
}

func judgeJSON(choice string) string {
	return `{"chosen_answer": "` + choice + `", "reasoning": "The speaker is right."}`
}

var framingAwkwardReplies = []framingAwkward{
	{"clean", text(judgeJSON("1")), "answered", nil, false},
	{"prose around JSON", text("My judgment:\n" + judgeJSON("1") + "\nThanks."), "answered", []string{"surrounding-text"}, false},
	{"prose around JSON, strict", text("My judgment:\n" + judgeJSON("1") + "\nThanks."), "unparseable", []string{"surrounding-text"}, true},
	{"reasoning block with the other choice", text("<think>" + judgeJSON("2") + "</think>" + judgeJSON("1")), "answered", []string{"reasoning-block"}, false},
	{"fenced block inside prose", text("Here:\n```json\n" + judgeJSON("2") + "\n```\nDone."), "answered", []string{"fenced-code", "surrounding-text"}, false},
	{"two objects that disagree", text(judgeJSON("1") + " or " + judgeJSON("2")), "unparseable", nil, false},
	{"duplicate keys after case-folding", text(`{"chosen_answer": "1", "CHOSEN_ANSWER": "2", "reasoning": "x"}`), "unparseable", nil, false},
	{"refusal in English", text("I cannot judge this conversation."), "refusal", nil, false},
	{"refusal in Chinese", text("抱歉，我不能评判这段对话。"), "refusal", nil, false},
	{"provider refusal field", reply{refusal: "I can't help with that.", finish: "stop"}, "refusal", nil, false},
	{"content filter", reply{finish: "content_filter"}, "refusal", nil, false},
	{"empty reply", text(""), "empty", nil, false},
}

func scriptedJudge(t *testing.T, rep reply) *httptest.Server {
	var n atomic.Int64
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		msg := map[string]any{"role": "assistant", "content": rep.content}
		if rep.refusal != "" {
			msg["refusal"] = rep.refusal
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": fmt.Sprintf("cmpl-%d", n.Add(1)), "object": "chat.completion", "created": 1, "model": "judge",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": rep.finish}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	}))
}

// TestFramingAwkwardRepliesEndToEnd runs budge framing run against a
// scripted OpenAI-compatible judge once per kind of awkward reply and
// checks every exported session's status and repairs.
func TestFramingAwkwardRepliesEndToEnd(t *testing.T) {
	for _, kind := range framingAwkwardReplies {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			hs := scriptedJudge(t, kind.reply)
			defer hs.Close()
			dir := t.TempDir()
			args := []string{"framing", "run", "--dir", dir, "--model", "openai-compatible:judge", "--base-url", hs.URL + "/v1",
				"--concurrency", "8", "--max-attempts", "1", "--quiet"}
			if kind.strict {
				args = append(args, "--strict-parse")
			}
			// A judge none of whose answers can be read is not measured.
			want := ExitOK
			if kind.status != "answered" {
				want = ExitUnmeasured
			}
			if code, out, errs := budge(t, args...); code != want {
				t.Fatalf("run exit %d, want %d\n%s\n%s", code, want, out, errs)
			}
			code, out, errs := budge(t, "export", "latest", "--dir", dir)
			if code != ExitOK {
				t.Fatalf("export exit %d: %s", code, errs)
			}
			n, bad := 0, 0
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				var r struct {
					Status  string   `json:"parse_status"`
					Repairs []string `json:"repairs"`
					Problem string   `json:"problem"`
				}
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					t.Fatal(err)
				}
				n++
				if r.Status != kind.status || !slices.Equal(r.Repairs, nonNil(kind.repairs)) {
					if bad++; bad < 4 {
						t.Errorf("status %s repairs %v (%s), want %s %v", r.Status, r.Repairs, r.Problem, kind.status, kind.repairs)
					}
				}
			}
			if n == 0 || bad > 0 {
				t.Errorf("%d of %d sessions off", bad, n)
			}
			code, out, _ = budge(t, "framing", "report", "latest", "--dir", dir, "--format", "json")
			if code != ExitOK {
				t.Fatalf("report exit %d", code)
			}
			var rep struct {
				Measures struct {
					Parse struct {
						Leniency struct {
							Replies  int `json:"replies"`
							Strict   int `json:"read_strictly"`
							Tolerant int `json:"read_tolerantly"`
						} `json:"strict_vs_tolerant"`
					} `json:"parsing"`
				} `json:"measures"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("report: %v", err)
			}
			l := rep.Measures.Parse.Leniency
			readable := kind.status == "answered" || kind.strict
			wantStrict := 0
			if readable && len(kind.repairs) == 0 {
				wantStrict = n
			}
			if l.Replies != n || (l.Tolerant == n) != readable || l.Strict != wantStrict {
				t.Errorf("the report counts %+v, want %d replies, read tolerantly: %v, strictly: %d", l, n, readable, wantStrict)
			}
		})
	}
}
