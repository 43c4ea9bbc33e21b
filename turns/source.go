package turns

import (
	"context"
	"time"

	"github.com/nanobot-go/nanobot/agent"
)

// Source reads the recorded items of its inbox channels: what each needs,
// and the turn a batch of them makes. The engine calls it from the
// goroutine that queues or runs the items.
type Source interface {
	// Prepare reads a recorded item. A job with Now set needs no turn: it
	// is closed at once with Reply ("": none) sent to Turn's chat.
	Prepare(ctx context.Context, it InboxItem) Job
	// Plan builds the turn of a batch: one job, the items of one
	// interrupted turn, or consecutive texts that merge.
	Plan(ctx context.Context, batch []*Job) Plan
}

// Presence is a source that shows its chat that a turn runs (Telegram's
// "typing…"), until the returned function is called.
type Presence interface {
	Busy(ctx context.Context, batch []*Job) (done func())
}

// Progress is a source that shows its chat what a running turn does (a
// status message that tells which tool runs).
type Progress interface {
	// Progress returns the function told each event of the batch's turn,
	// one at a time, and the one called once when the turn has ended
	// (answered, failed, stopped or interrupted).
	Progress(ctx context.Context, batch []*Job) (report func(agent.ProgressEvent), end func())
}

// DiskFull is a source that can tell its chat, outside the outbox, that
// its message waits for disk space.
type DiskFull interface {
	StorageFull(ctx context.Context, batch []*Job, retry time.Duration)
}

// Job is a recorded item waiting for its chat's turn.
type Job struct {
	Item InboxItem // set by the engine
	// Chat is the queue the job waits in: one turn at a time per chat
	// ("telegram:123").
	Chat string
	// Merge joins consecutive pending jobs of a chat with the same
	// non-empty key into one turn (a sender's texts written in a row).
	Merge string
	// Text is what the model reads of the job; merged jobs' texts are
	// joined, and /stop names the last.
	Text string
	// Now marks a job answered at once with Reply, without a turn (a
	// command, an update with nothing to answer); Turn addresses it.
	Now   bool
	Reply string
	Turn  agent.Turn
	// Data is the source's own.
	Data any

	src  Source
	wait *waiter // a caller waits for this turn (Await)
}

// Plan is the turn of a batch.
type Plan struct {
	// Turn is the turn to run; the engine sets its Inbox to the batch's
	// items and gives it an ID when it has none.
	Turn    agent.Turn
	Message agent.Message
	Resume  bool
	// Answered marks a batch answered without the model (/new, a file too
	// large): the items are closed with Reply.
	Answered bool
	Reply    string
	// Told is what the chat is told after the turn, when its own records
	// did not close the items; nil is Told. An interrupted turn (a
	// shutdown) is never told: it resumes on the next start.
	Told func(res agent.Result, err error) string
	// Steer, when set, hands the running turn what its chat typed since
	// the last call, like a recorded text of the chat's queue (a terminal
	// that reads while the turn works). Used when steering is on.
	Steer func() []agent.Steer
}

// Apology is told when a turn failed without an honest text of its own.
const Apology = "Sorry, something went wrong on my side and I could not answer that. Please try again."

// Told is the default: the answer, the loop's honest text for an outage,
// or an apology.
func Told(res agent.Result, err error) string {
	if err != nil && res.Text == "" {
		return Apology
	}
	return res.Text
}

// MergedText joins the texts of a batch as one message.
func MergedText(batch []*Job) string {
	var out string
	for _, j := range batch {
		if j.Text == "" {
			continue
		}
		if out != "" {
			out += "\n\n"
		}
		out += j.Text
	}
	return out
}
