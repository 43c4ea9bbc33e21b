package turns

import (
	"errors"
	"time"
)

// ErrStorageFull is matched (errors.Is) by a store's error when a write was
// refused because the disk is full: nothing new can be saved until space
// is freed, and what was saved before is intact.
var ErrStorageFull = errors.New("storage is full")

// Inbox states.
const (
	InboxPending = "pending" // recorded, not yet given to the model
	InboxStarted = "started" // its turn's first record is written; after a crash it is resumed, not re-run
	InboxDone    = "done"    // answered (the reply is in the outbox)
)

// InboxItem is an inbound message, recorded before its source acknowledges
// it: a Telegram update, a scheduled job's firing, a heartbeat run, a
// background task's report.
type InboxItem struct {
	ID         int64  // assigned by the store
	Channel    string // the inbox channel: "telegram", "telegram.system", "cron", "heartbeat"
	UpdateID   int64  // the source's own id; unique per channel
	ChatID     string
	Payload    []byte // the message exactly as received (JSON)
	State      string
	ReceivedAt time.Time
	// MessageID is the session message of the turn that answers the item,
	// set when its turn starts (0 while pending). Items answered by one
	// turn share it.
	MessageID int64
}

// Outbox states.
const (
	OutboxPending = "pending"
	OutboxSent    = "sent"
	OutboxFailed  = "failed" // given up on; kept for the record
)

// OutboxItem is a reply waiting to be delivered until its channel accepts
// it.
type OutboxItem struct {
	ID      int64
	Channel string
	ChatID  string
	// Text is Markdown as the model wrote it (the channel renders it).
	Text string
	// ReplyTo is the channel's id of the message being answered (0: none).
	ReplyTo int64
	// InboxID links the reply to the inbound message it answers (0: none).
	InboxID       int64
	State         string
	Attempts      int
	SentMessageID int64 // the channel's id for the delivered message
	CreatedAt     time.Time
}
