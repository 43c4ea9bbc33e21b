// Package session names the conversation a turn belongs to: a chat of a
// channel, a scheduled job's runs, a background task, or the heartbeat.
// Its String form is what the database stores ("telegram:123",
// "cli:default", "cron:5", "subagent:7", "heartbeat"); Parse reads it back.
package session

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Kind is what a session belongs to.
type Kind string

const (
	KindChat      Kind = "chat"      // a chat of a channel
	KindJob       Kind = "cron"      // the runs of a scheduled job
	KindTask      Kind = "subagent"  // a background task
	KindHeartbeat Kind = "heartbeat" // the heartbeat's turns
)

// Session is one session. Channel and Chat are set for a chat; ID for a job
// or a task. The zero Session is no session and its String is "".
type Session struct {
	Channel, Chat string
	Kind          Kind
	ID            int64
}

// Heartbeat is the session of the heartbeat's turns.
var Heartbeat = Session{Kind: KindHeartbeat}

// Chat is the session of chat on channel.
func Chat(channel, chat string) Session { return Session{Kind: KindChat, Channel: channel, Chat: chat} }

// Job is the session of the runs of the job id.
func Job(id int64) Session { return Session{Kind: KindJob, ID: id} }

// Task is the session of the background task id.
func Task(id int64) Session { return Session{Kind: KindTask, ID: id} }

// IsZero reports whether s is no session.
func (s Session) IsZero() bool { return s == Session{} }

// String is the stored form of s.
func (s Session) String() string {
	switch s.Kind {
	case KindChat:
		return s.Channel + ":" + s.Chat
	case KindJob, KindTask:
		return string(s.Kind) + ":" + strconv.FormatInt(s.ID, 10)
	case KindHeartbeat:
		return string(KindHeartbeat)
	}
	return ""
}

// ErrSyntax is wrapped by Parse's errors.
var ErrSyntax = errors.New("not a session")

// Parse reads the stored form of a session: the inverse of String.
func Parse(text string) (Session, error) {
	if text == string(KindHeartbeat) {
		return Heartbeat, nil
	}
	prefix, rest, ok := strings.Cut(text, ":")
	switch {
	case !ok:
		return Session{}, fmt.Errorf("%q: %w (no channel: prefix)", text, ErrSyntax)
	case prefix == string(KindJob) || prefix == string(KindTask):
		id, err := strconv.ParseInt(rest, 10, 64)
		if err != nil || strconv.FormatInt(id, 10) != rest {
			return Session{}, fmt.Errorf("%q: %w (bad id)", text, ErrSyntax)
		}
		return Session{Kind: Kind(prefix), ID: id}, nil
	case prefix == "":
		return Session{}, fmt.Errorf("%q: %w (empty channel)", text, ErrSyntax)
	case rest == "":
		return Session{}, fmt.Errorf("%q: %w (empty chat)", text, ErrSyntax)
	}
	return Chat(prefix, rest), nil
}
