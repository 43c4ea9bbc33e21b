package main

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot"
	"github.com/nanobot-go/nanobot/agent/openai/providertest"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/config"
)

// startGatewayOn starts the gateway with the example config changed only
// in what a user of provider p changes (base URL, model, API key), plus
// what the harness needs (the Bot API fake, no admin listener) and extra.
func startGatewayOn(t *testing.T, p providertest.Profile, extra map[string]string) (*gatewayHarness, *providertest.Server) {
	t.Helper()
	s := providertest.New(t, p, providertest.WithAPIKey(testKey))
	tg := telegramtest.NewServer(t, botToken)
	dir := t.TempDir()
	values := telegramValues(tg)
	maps.Copy(values, map[string]string{"provider.base_url": s.URL(), "provider.model": p.Model, "provider.api_key": testKey, "gateway.listen": "", "web.listen": ""})
	maps.Copy(values, extra)
	out, err := config.SetKeys(nanobot.ExampleConfig, values)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, out, 0o600); err != nil {
		t.Fatal(err)
	}
	h := &gatewayHarness{t: t, tg: tg, dir: dir, cfg: cfg, logs: &syncBuffer{}}
	h.start()
	t.Cleanup(func() { h.stop() })
	return h, s
}

func reportViolations(t *testing.T, s *providertest.Server) {
	t.Helper()
	for _, v := range s.Violations() {
		t.Errorf("request %d broke %q (%s): HTTP %d %s", v.Request, v.Rule, v.Source, v.Status, v.Message)
	}
}

// TestProvidersThroughTheGateway: with every provider, a question that
// takes a tool round and a follow-up in the same chat are answered over
// Telegram, and no request breaks one of the provider's documented rules.
func TestProvidersThroughTheGateway(t *testing.T) {
	for _, p := range providertest.All() {
		t.Run(p.Name, func(t *testing.T) {
			h, s := startGatewayOn(t, p, nil)
			writeWorkspaceFile(t, filepath.Join(h.dir, "workspace", "notes.md"), "buy milk\n")
			s.Script(
				providertest.Reply{ToolCalls: []providertest.ScriptedCall{{Name: "list_dir", Arguments: `{"path":"."}`}}},
				providertest.Reply{Text: "The workspace holds notes.md."},
				providertest.Reply{Text: "You are welcome."},
			)
			defer reportViolations(t, s)
			if got := h.ask("What is in the workspace?"); got.Text != "The workspace holds notes.md." {
				t.Fatalf("answer %q, want the model's text and nothing else (no reasoning)", got.Text)
			}
			if got := h.ask("Thanks!"); got.Text != "You are welcome." {
				t.Fatalf("follow-up answer %q", got.Text)
			}
			reqs := s.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests, want 3", len(reqs))
			}
			// The tool ran and its result went back; the follow-up carries
			// the tool round.
			for i, body := range reqs[1:] {
				if !strings.Contains(string(body), "notes.md") || !strings.Contains(string(body), "list_dir") {
					t.Errorf("request %d lacks the tool round: %s", i+2, body)
				}
			}
		})
	}
}

// TestProvidersWrapUp: a turn that uses all its steps ends with a call that
// rules tool calls out after a history of them; providers with rules on
// message order accept it.
func TestProvidersWrapUp(t *testing.T) {
	for _, p := range []providertest.Profile{providertest.Mistral(), providertest.Zhipu(), providertest.DeepSeek(), providertest.Gemini(), providertest.VLLMMistral()} {
		t.Run(p.Name, func(t *testing.T) {
			h, s := startGatewayOn(t, p, map[string]string{"agent.max_iterations": "2"})
			call := providertest.Reply{ToolCalls: []providertest.ScriptedCall{{Name: "list_dir", Arguments: `{"path":"."}`}}}
			s.Script(call, call, providertest.Reply{Text: "I listed the workspace twice; the search is not finished."})
			defer reportViolations(t, s)
			if got := h.ask("Find the tax file."); !strings.Contains(got.Text, "not finished") {
				t.Fatalf("answer %q, want the wrap-up", got.Text)
			}
			reqs := s.Requests()
			if len(reqs) != 3 || !strings.Contains(string(reqs[2]), `"tool_choice":"none"`) {
				t.Errorf("%d requests; the last: %s; want 3, the last with tool_choice none", len(reqs), reqs[len(reqs)-1])
			}
		})
	}
}

// TestProviderBrokenHistoryHeals: a chat whose stored history the
// provider refuses (here: tool calls stored, as an older version did,
// without the thought signatures Gemini handed out) is answered anyway,
// the next message works too, and the refused part is folded into
// memory rather than lost.
func TestProviderBrokenHistoryHeals(t *testing.T) {
	h, s := startGatewayOn(t, providertest.Gemini(), nil)
	s.Script(
		providertest.Reply{ToolCalls: []providertest.ScriptedCall{{Name: "list_dir", Arguments: `{"path":"."}`}}},
		providertest.Reply{Text: "The workspace is empty."},
	)
	if got := h.ask("What is in the workspace?"); got.Text != "The workspace is empty." {
		t.Fatalf("answer %q", got.Text)
	}
	db := h.db()
	res, err := db.Exec(`UPDATE messages SET extra = NULL,
		tool_calls = (SELECT json_group_array(json_remove(value, '$.extra')) FROM json_each(messages.tool_calls))
		WHERE tool_calls LIKE '%"extra"%'`)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		t.Fatal("no stored provider fields to drop: the signatures were not kept")
	}
	s.Script(
		providertest.Reply{Text: "Yes, I am here."},
		providertest.Reply{ToolCalls: []providertest.ScriptedCall{{Name: "save_memory",
			Arguments: `{"history_entry":"[2026-03-28 08:00] Looked at the workspace; it was empty.","memory_update":"- Keeps notes in the workspace."}`}}},
		providertest.Reply{Text: "Still here."},
	)
	if got := h.ask("Are you there?"); got.Text != "Yes, I am here." {
		t.Fatalf("answer after the refused history %q, want the answer of the turn alone", got.Text)
	}
	v := s.Violations()
	if len(v) != 1 || !strings.Contains(v[0].Message, "thought_signature") {
		t.Fatalf("violations %+v, want the one refusal of the stripped history", v)
	}
	// The refused part is folded into memory in the background.
	waitLogged(t, h.logs, "session consolidated", "session=telegram:111")
	var live, folded int
	db.QueryRow(`SELECT count(*) FROM messages WHERE session = 'telegram:111' AND state = 'live'`).Scan(&live)
	db.QueryRow(`SELECT count(*) FROM history`).Scan(&folded)
	if folded != 1 || live != 2 {
		t.Errorf("%d live messages, %d HISTORY entries; want the turn since the refusal (2) and the refused part folded (1)", live, folded)
	}
	if got := h.ask("And now?"); got.Text != "Still here." {
		t.Fatalf("next answer %q", got.Text)
	}
	if n := len(s.Violations()); n != 1 {
		t.Errorf("%d refusals, want the one; the chat stayed broken: %+v", n, s.Violations())
	}
}
