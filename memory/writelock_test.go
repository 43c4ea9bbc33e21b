package memory

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Urgent waiters get the lock before those queued earlier; a waiter that
// gives up leaves the queue, and a hand-over to it is passed on.
func TestWriteLockOrder(t *testing.T) {
	var l writeLock
	ctx := t.Context()
	if err := l.lock(ctx, false); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	waiting := 0
	queued := func(name string, urgent bool) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.lock(ctx, urgent); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			l.unlock()
		}()
		waiting++
		waitQueued(t, &l, name, waiting)
	}
	queued("normal 1", false)
	queued("normal 2", false)
	queued("urgent", true)

	// One that gives up while queued does not block the others.
	gone, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- l.lock(gone, false) }()
	waitQueued(t, &l, "cancelled", waiting+1)
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled lock succeeded")
	}

	l.unlock()
	wg.Wait()
	want := []string{"urgent", "normal 1", "normal 2"}
	if len(order) != 3 || order[0] != want[0] || order[1] != want[1] || order[2] != want[2] {
		t.Errorf("order = %q, want %q", order, want)
	}
	if l.held {
		t.Error("the lock is still held after everyone left")
	}
}

// waitQueued waits until n waiters are queued. The lock tells nobody when
// one queues, so it is polled.
func waitQueued(t *testing.T, l *writeLock, name string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l.mu.Lock()
		m := len(l.urgent) + len(l.normal)
		l.mu.Unlock()
		if m >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never queued", name)
		}
		time.Sleep(time.Millisecond)
	}
}
