package safety

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

// fakeResolver answers from a table and counts the questions.
type fakeResolver struct {
	mu    sync.Mutex
	names map[string][]string
	asked map[string]int
}

func (f *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked[host]++
	addrs, ok := f.names[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	var out []netip.Addr
	for _, a := range addrs {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

func resolvingPolicy(t *testing.T, allowPrivate bool) (*Policy, *fakeResolver) {
	t.Helper()
	r := &fakeResolver{asked: map[string]int{}, names: map[string][]string{
		"metadata.example.test": {"169.254.169.254"},
		"meta6.example.test":    {"fd00:ec2::254"},
		"mapped.example.test":   {"::ffff:169.254.169.254"},
		"loop.example.test":     {"127.0.0.1"},
		"db.example.test":       {"10.0.0.5"},
		"mixed.example.test":    {"93.184.216.34", "169.254.169.254"},
		"public.example.test":   {"93.184.216.34"},
	}}
	p, err := NewPolicy(PolicyConfig{Workspace: "/home/u/ws", Home: "/home/u", Resolver: r, AllowPrivate: allowPrivate})
	if err != nil {
		t.Fatal(err)
	}
	return p, r
}

// A name is judged by where it leads: one resolving to a metadata service
// or a private network is refused like the address itself.
func TestNetworkClientNamesAreResolved(t *testing.T) {
	p, _ := resolvingPolicy(t, false)
	tests := []struct {
		cmd      string
		want     Action
		category string
	}{
		{"curl http://metadata.example.test/latest/meta-data/", Deny, "secrets"},
		{"curl -s http://meta6.example.test/", Deny, "secrets"},
		{"wget -qO- http://mapped.example.test/", Deny, "secrets"},
		{"curl http://mixed.example.test/", Deny, "secrets"},
		{"curl https://METADATA.example.test./x", Deny, "secrets"},
		{"nc metadata.example.test 80", Deny, "secrets"},
		{"socat - TCP:metadata.example.test:80", Deny, "secrets"},
		{"curl http://db.example.test:5432/", Deny, "internal_network"},
		{"curl http://loop.example.test:8080/", Allow, ""}, // loopback stays open, as 127.0.0.1 does
		{"curl http://loop.example.test:2375/containers/json", Deny, "privilege"},
		{"curl https://public.example.test/", Allow, ""},
		{"curl https://nxdomain.example.test/", Allow, ""}, // judged by its spelling
	}
	for _, tc := range tests {
		got := p.Check(tc.cmd)
		if got.Action != tc.want || got.Category != tc.category {
			t.Errorf("Check(%q) = %v, want %s %s", tc.cmd, got, tc.want, tc.category)
		}
	}
	if got := p.Check("curl http://metadata.example.test/"); !strings.Contains(got.Reason, "resolves to 169.254.169.254") {
		t.Errorf("reason %q does not say where the name leads", got.Reason)
	}

	// allow_private opens private networks and metadata, never the engine's API.
	open, _ := resolvingPolicy(t, true)
	for cmd, want := range map[string]Action{
		"curl http://metadata.example.test/":                 Allow,
		"curl http://db.example.test:5432/":                  Allow,
		"curl http://loop.example.test:2375/containers/json": Deny,
	} {
		if got := open.Check(cmd); got.Action != want {
			t.Errorf("Check(%q) with allow_private = %v, want %s", cmd, got, want)
		}
	}
}

// Lookups are cached across checks and bounded within one.
func TestNetworkClientLookupsAreBounded(t *testing.T) {
	p, r := resolvingPolicy(t, false)
	for range 3 {
		p.Check("curl https://public.example.test/ https://public.example.test/a")
	}
	if n := r.asked["public.example.test"]; n != 1 {
		t.Errorf("public.example.test was looked up %d times, want 1", n)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { p.Check("curl http://metadata.example.test/ https://public.example.test/") })
	}
	wg.Wait()
	var hosts []string
	for i := range maxLookups {
		hosts = append(hosts, fmt.Sprintf("https://h%d.example.test/", i))
	}
	if got := p.Check("curl " + strings.Join(hosts, " ")); got.Action != Allow {
		t.Errorf("Check(curl with %d hosts) = %v, want allow", len(hosts), got)
	}
	hosts = append(hosts, "http://metadata.example.test/")
	if got := p.Check("curl " + strings.Join(hosts, " ")); got.Action != Deny {
		t.Errorf("Check(curl with %d hosts, the last a metadata name) = %v, want deny", len(hosts), got)
	}
}
