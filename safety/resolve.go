package safety

import (
	"context"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/internal/lazyre"
)

// Resolver looks up the addresses of a host name; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Bounds of the name resolution one Check does for network clients.
const (
	lookupBudget = 2 * time.Second // all lookups of one command line together
	maxLookups   = 16              // distinct names one command line may make the filter resolve
	dnsCacheSize = 512
	dnsCacheTTL  = time.Minute
)

// dnsName is a host name worth resolving.
var dnsName = lazyre.New(`^[a-z0-9_]([a-z0-9_-]{0,62}\.)*[a-z0-9_-]{1,63}$`)

// dnsCache remembers lookups for a while, failed ones too, so that a
// busy line of commands costs one round trip per name.
type dnsCache struct {
	r   Resolver
	now func() time.Time
	mu  sync.Mutex
	m   map[string]dnsEntry
}

type dnsEntry struct {
	addrs []netip.Addr
	at    time.Time
}

func newDNSCache(r Resolver) *dnsCache {
	return &dnsCache{r: r, now: time.Now, m: map[string]dnsEntry{}}
}

// lookup returns the addresses of host, from the cache or the resolver
// within ctx; nil when the name does not resolve.
func (d *dnsCache) lookup(ctx context.Context, host string) (addrs []netip.Addr, cached bool) {
	d.mu.Lock()
	e, ok := d.m[host]
	d.mu.Unlock()
	if ok && d.now().Sub(e.at) < dnsCacheTTL {
		return e.addrs, true
	}
	addrs, err := d.r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		addrs = nil
	}
	if err != nil && ctx.Err() != nil {
		return nil, false // out of time: not an answer worth keeping
	}
	d.mu.Lock()
	if len(d.m) >= dnsCacheSize {
		clear(d.m)
	}
	d.m[host] = dnsEntry{addrs: addrs, at: d.now()}
	d.mu.Unlock()
	return addrs, false
}

// lookups is what one Check has spent on name resolution.
type lookups struct {
	names    map[string]bool
	deadline time.Time
}

// resolveDest classifies a host name by the addresses it resolves to now:
// the most dangerous of them counts. ok is false when the policy has no
// resolver, the name is not one, or it does not resolve; over is true when
// the line names more hosts than the filter looks up.
func (j *judge) resolveDest(host string) (d netDest, addr netip.Addr, ok, over bool) {
	dc := j.p.dns
	h := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(host)), ".")
	if dc == nil || len(h) > 253 || !dnsName.MatchString(h) {
		return destPublic, netip.Addr{}, false, false
	}
	if j.dns.names == nil {
		j.dns = lookups{names: map[string]bool{}, deadline: time.Now().Add(lookupBudget)}
	}
	if !j.dns.names[h] {
		if len(j.dns.names) >= maxLookups {
			return destPublic, netip.Addr{}, false, true
		}
		j.dns.names[h] = true
	}
	ctx, cancel := context.WithDeadline(context.Background(), j.dns.deadline)
	defer cancel()
	addrs, _ := dc.lookup(ctx, h)
	d = destPublic
	for _, a := range addrs {
		a = a.Unmap()
		if c := j.p.classifyAddr(a); !addr.IsValid() || c > d {
			d, addr = c, a
		}
	}
	return d, addr, len(addrs) > 0, false
}
