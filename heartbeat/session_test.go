package heartbeat_test

import (
	"testing"

	"github.com/nanobot-go/nanobot/heartbeat"
	"github.com/nanobot-go/nanobot/session"
)

func TestSessionIsTheHeartbeatSession(t *testing.T) {
	if heartbeat.Session != session.Heartbeat.String() {
		t.Errorf("Session = %q, want %q", heartbeat.Session, session.Heartbeat.String())
	}
}
