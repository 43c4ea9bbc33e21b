package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/agent"
)

type fakeOutbox struct{ sent []string }

func (f *fakeOutbox) Send(_ context.Context, from agent.Turn, chat, text string) error {
	f.sent = append(f.sent, fmt.Sprintf("%s:%s %s", from.Channel, chat, text))
	return nil
}

func TestMessage(t *testing.T) {
	owner := agent.Turn{Channel: "telegram", ChatID: "111", SenderID: "111"}
	guest := agent.Turn{Channel: "telegram", ChatID: "333", SenderID: "333"}
	mayReach := func(t agent.Turn, chat string) error {
		if t.SenderID != "111" {
			return errors.New("only the owner may send to another chat")
		}
		if chat != "333" {
			return fmt.Errorf("chat %s is not allowed", chat)
		}
		return nil
	}
	tests := []struct {
		name     string
		turn     agent.Turn
		args     string
		want     string
		wantSent string
		wantErr  string
	}{
		{name: "own chat", turn: owner, args: `{"content":"Working on it…"}`, want: "Sent to this chat.", wantSent: "telegram:111 Working on it…"},
		{name: "own chat named", turn: guest, args: `{"content":"hi","chat_id":333}`, want: "Sent to this chat.", wantSent: "telegram:333 hi"},
		{name: "owner to another allowed chat", turn: owner, args: `{"content":"dinner at 8","chat_id":333}`, want: "Sent to chat 333.", wantSent: "telegram:333 dinner at 8"},
		{name: "owner to a chat not allowed", turn: owner, args: `{"content":"hi","chat_id":999}`, wantErr: "chat 999 is not allowed"},
		{name: "guest to another chat", turn: guest, args: `{"content":"hi","chat_id":"111"}`, wantErr: "only the owner may send to another chat"},
		{name: "empty", turn: owner, args: `{"content":"  "}`, wantErr: "content is empty"},
		{name: "too long", turn: owner, args: `{"content":"` + strings.Repeat("x", maxMessage+1) + `"}`, wantErr: "more than the 20000 one message may have"},
		{name: "no chat", turn: agent.Turn{Session: "cli:default"}, args: `{"content":"hi"}`, wantErr: "no chat to send messages to"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := &fakeOutbox{}
			got, err := Message{Outbox: out, MayReach: mayReach}.Run(agent.WithTurn(t.Context(), tt.turn), []byte(tt.args))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("message(%.60s) = %q, %v; want error containing %q", tt.args, got, err, tt.wantErr)
				}
				if len(out.sent) != 0 {
					t.Errorf("sent %q after an error", out.sent)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("message(%s) = %q, %v; want %q", tt.args, got, err, tt.want)
			}
			if len(out.sent) != 1 || out.sent[0] != tt.wantSent {
				t.Errorf("sent %q, want [%s]", out.sent, tt.wantSent)
			}
		})
	}
}
