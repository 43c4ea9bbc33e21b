package turns

import (
	"fmt"
	"testing"
)

func TestTakeBatch(t *testing.T) {
	text := func(id int64, sender string) *Job {
		return &Job{Item: InboxItem{ID: id, State: InboxPending}, Merge: sender, Text: fmt.Sprint(id)}
	}
	started := func(id int64) *Job {
		j := text(id, "1")
		j.Item.State = InboxStarted
		return j
	}
	startedBy := func(id, message int64) *Job {
		j := started(id)
		j.Item.MessageID = message
		return j
	}
	media := &Job{Item: InboxItem{ID: 9, State: InboxPending}}
	waited := &Job{Merge: "1", wait: &waiter{}}
	for _, tc := range []struct {
		name string
		jobs []*Job
		want []int // batch sizes in order
	}{
		{"texts merge", []*Job{text(1, "1"), text(2, "1"), text(3, "1")}, []int{3}},
		{"senders split", []*Job{text(1, "1"), text(2, "2"), text(3, "2")}, []int{1, 2}},
		{"unmergeable alone", []*Job{text(1, "1"), media, text(3, "1")}, []int{1, 1, 1}},
		{"awaited alone", []*Job{text(1, "1"), waited, text(3, "1")}, []int{1, 1, 1}},
		{"interrupted turn resumes alone", []*Job{started(1), started(2), text(3, "1")}, []int{2, 1}},
		{"interrupted turns resume apart", []*Job{startedBy(1, 10), startedBy(2, 10), startedBy(3, 20)}, []int{2, 1}},
		// A text the turn took while it ran came after a photo it did not.
		{"a turn resumes with what it took", []*Job{startedBy(1, 10), media, startedBy(3, 10)}, []int{2, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := &chatQueue{jobs: tc.jobs}
			var got []int
			for len(q.jobs) > 0 {
				got = append(got, len(takeBatch(q)))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("batches %v, want %v", got, tc.want)
			}
		})
	}
	many := make([]*Job, 25)
	for i := range many {
		many[i] = text(int64(i+1), "1")
	}
	if n := len(takeBatch(&chatQueue{jobs: many})); n != maxMerge {
		t.Errorf("a batch of %d, want at most %d merged", n, maxMerge)
	}
}
