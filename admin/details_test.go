package admin

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadyzDetails(t *testing.T) {
	ready := errors.New("telegram not reached yet")
	var fail error
	s := startServer(t, nil, func(context.Context) error { return fail })
	s.SetDetails(func(context.Context) []string {
		return []string{"mcp github (stdio): ready, 3 tools", "mcp docs (http): failed: connection refused; retry in 4s"}
	})
	want := []string{"mcp github (stdio): ready, 3 tools", "mcp docs (http): failed: connection refused; retry in 4s"}

	code, body := get(t, http.MethodGet, "http://"+s.Addr()+"/readyz")
	if code != http.StatusOK || body != "ready\n"+want[0]+"\n"+want[1]+"\n" {
		t.Errorf("/readyz = %d %q", code, body)
	}
	if err := Probe(t.Context(), s.Addr(), true); err != nil {
		t.Errorf("Probe(ready) = %v: details must not make the daemon unready", err)
	}
	lines, err := ReadyDetails(t.Context(), s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("ReadyDetails (-want +got):\n%s", diff)
	}

	fail = ready
	code, body = get(t, http.MethodGet, "http://"+s.Addr()+"/readyz")
	if code != http.StatusServiceUnavailable || body != "not ready: telegram not reached yet\n"+want[0]+"\n"+want[1]+"\n" {
		t.Errorf("/readyz when not ready = %d %q", code, body)
	}
	if lines, _ := ReadyDetails(t.Context(), s.Addr()); !cmp.Equal(want, lines) {
		t.Errorf("ReadyDetails when not ready = %q", lines)
	}
}
