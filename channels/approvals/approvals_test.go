package approvals

import (
	"context"
	"errors"
	"testing"
)

type askerFunc func(ctx context.Context, command, reason string) (bool, string, error)

func (f askerFunc) Approve(ctx context.Context, command, reason string) (bool, string, error) {
	return f(ctx, command, reason)
}

func TestBroker(t *testing.T) {
	var b Broker
	if ok, _, err := b.Approve(t.Context(), "rm -rf build", "deletes files"); ok || !errors.Is(err, ErrNobody) {
		t.Fatalf("unserved broker = %v, %v; want a refusal naming who could approve", ok, err)
	}
	var asked string
	stop := b.Serve(askerFunc(func(_ context.Context, command, _ string) (bool, string, error) {
		asked = command
		return true, "", nil
	}))
	if ok, _, err := b.Approve(t.Context(), "rm -rf build", "deletes files"); !ok || err != nil || asked != "rm -rf build" {
		t.Fatalf("served broker = %v, %v (asked %q); want the asker's approval", ok, err, asked)
	}
	stop()
	if _, _, err := b.Approve(t.Context(), "ls", ""); !errors.Is(err, ErrNobody) {
		t.Fatalf("after stop = %v, want ErrNobody", err)
	}
}
