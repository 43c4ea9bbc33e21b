package safety

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/nanobot-go/nanobot/internal/lazyre"
)

// Destinations of network clients (curl, wget, nc, socat, one-liners) are
// judged with the web tools' URL guard: cloud metadata endpoints and
// private networks are refused unless tools.web.allow_private says
// otherwise. Loopback stays open, so that a server started in the
// workspace can be tried out, except for the container engine's API.
// Host names are also resolved when the policy has a resolver. That judges
// where a name leads when the command is checked; the command resolves it
// again when it runs, and a name whose answer changes in between (DNS
// rebinding) is beyond what a filter can see: only confining the
// command's network (tools.exec.network, a network namespace) closes that.

// metadataAddrs are the instance metadata services of the clouds: they hand
// out the machine's credentials to anyone who asks.
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, OpenStack, DigitalOcean, ...
	netip.MustParseAddr("169.254.170.2"),   // AWS ECS task credentials
	netip.MustParseAddr("169.254.169.253"), // AWS DNS
	netip.MustParseAddr("169.254.169.123"), // AWS time
	netip.MustParseAddr("fd00:ec2::254"),   // AWS over IPv6
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
	netip.MustParseAddr("168.63.129.16"),   // Azure wire server
}

// metadataNames resolve to a metadata service.
var metadataNames = []string{
	"metadata", "metadata.google.internal", "metadata.goog", "instance-data", "instance-data.ec2.internal",
	"metadata.tencentyun.com", "metadata.platformequinix.com",
}

// internalSuffixes name hosts of a private network.
var internalSuffixes = []string{".internal", ".local", ".lan", ".home.arpa", ".intranet", ".corp", ".svc", ".cluster.local"}

// enginePorts are the container engine's TCP API (Docker, Podman): whoever
// reaches it is root on the host.
var enginePorts = map[string]bool{"2375": true, "2376": true, "4243": true}

// controlPorts are the local APIs of infrastructure daemons that hand out
// secrets or run code: etcd, Vault, Consul, Envoy's admin, memcached, the
// kubelet and the Kubernetes API server.
var controlPorts = map[string]string{"2379": "secrets", "2380": "secrets", "8200": "secrets", "8500": "secrets",
	"15000": "secrets", "19000": "secrets", "11211": "secrets", "10250": "containers", "10255": "containers",
	"6443": "containers", "10249": "containers", "9001": "services"}

var engineSockets = []string{"docker.sock", "containerd.sock", "podman.sock", "crio.sock", "dockershim.sock", "buildkitd.sock"}

// isEngineSocket reports whether p names a container engine's socket.
func isEngineSocket(p string) bool {
	p = strings.TrimPrefix(strings.ToLower(p), "unix://")
	for _, s := range engineSockets {
		if strings.HasSuffix(p, "/"+s) || p == s {
			return true
		}
	}
	return false
}

// embeddedIP finds an address spelled inside a wildcard DNS name such as
// 10.0.0.1.nip.io or 169-254-169-254.sslip.io.
var embeddedIP = lazyre.New(`(?i)^(?:[a-z0-9-]+[.-])?(\d{1,3})[.-](\d{1,3})[.-](\d{1,3})[.-](\d{1,3})\.(?:nip\.io|sslip\.io|xip\.io|traefik\.me|localtest\.me)$`)

// parseHostAddr reads an address the way the C library's inet_aton does:
// besides dotted decimal it accepts 1 to 4 parts in decimal, octal (0...)
// or hex (0x...), so 2852039166, 0xa9fea9fe and 0251.0376.0251.0376 all
// name 169.254.169.254. IPv6 may be bracketed.
func parseHostAddr(h string) (netip.Addr, bool) {
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if i := strings.IndexByte(h, '%'); i >= 0 {
		h = h[:i] // zone
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Unmap(), true
	}
	parts := strings.Split(h, ".")
	if len(parts) == 0 || len(parts) > 4 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		if p == "" {
			return netip.Addr{}, false
		}
		n, err := strconv.ParseUint(p, 0, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	var v uint64
	last := len(nums) - 1
	for i, n := range nums[:last] {
		if n > 255 {
			return netip.Addr{}, false
		}
		v |= n << (24 - 8*uint(i))
	}
	if nums[last] >= 1<<(32-8*uint(last)) {
		return netip.Addr{}, false
	}
	v |= nums[last]
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// splitHostPort separates "host:port" (or "[v6]:port"); a bare IPv6
// address has no port.
func splitHostPort(s string) (host, port string) {
	if strings.HasPrefix(s, "[") {
		if i := strings.Index(s, "]"); i > 0 {
			host, rest := s[:i+1], s[i+1:]
			return host, strings.TrimPrefix(rest, ":")
		}
	}
	if strings.Count(s, ":") == 1 {
		h, p, _ := strings.Cut(s, ":")
		return h, p
	}
	return s, ""
}

// hostOfTarget extracts host and port from a URL or a bare
// host[:port][/path] the way curl and wget accept them.
func hostOfTarget(v string) (host, port string) {
	if i := strings.Index(v, unknownMark); i >= 0 {
		v = v[:i+len(unknownMark)] // what follows is only known at run time
	}
	if i := strings.Index(v, "://"); i >= 0 {
		u, err := url.Parse(v)
		if err == nil && u.Host != "" {
			return u.Hostname(), u.Port()
		}
		v = v[i+3:]
	}
	if at := strings.LastIndex(strings.SplitN(v, "/", 2)[0], "@"); at >= 0 {
		v = v[at+1:]
	}
	v, _, _ = strings.Cut(v, "/")
	v, _, _ = strings.Cut(v, "?")
	v, _, _ = strings.Cut(v, "#")
	return splitHostPort(v)
}

// netDest classifies where a connection would go.
type netDest int

const (
	destPublic   netDest = iota // the internet, or unknown
	destLoopback                // this machine
	destInternal                // a private, link-local or reserved network
	destMetadata                // a cloud metadata service
)

// classifyHost judges a host name or address.
func (p *Policy) classifyHost(host string) netDest {
	h := strings.ToLower(strings.TrimSpace(host))
	if i := strings.Index(h, unknownMark); i >= 0 {
		h = h[:i]
		if !reAddrPrefix.MatchString(h) && !reDottedQuad.MatchString(h) {
			return destPublic // only known at run time
		}
	}
	if reAddrPrefix.MatchString(h) {
		// The rest is only known at run time, as in a scan loop over
		// 192.168.1.$i: judge the network the prefix names.
		h += strings.Repeat("1.", 3-strings.Count(h, "."))
		h = strings.TrimSuffix(h, ".")
	}
	h = strings.TrimSuffix(h, ".")
	if h == "" {
		return destPublic
	}
	if m := embeddedIP.FindStringSubmatch(h); m != nil {
		h = m[1] + "." + m[2] + "." + m[3] + "." + m[4]
	}
	if a, ok := parseHostAddr(h); ok {
		return p.classifyAddr(a)
	}
	for _, n := range metadataNames {
		if h == n {
			return destMetadata
		}
	}
	if h == "localhost" || strings.HasSuffix(h, ".localhost") || h == "localhost.localdomain" || h == "ip6-localhost" {
		return destLoopback
	}
	for _, s := range internalSuffixes {
		if strings.HasSuffix(h, s) {
			return destInternal
		}
	}
	return destPublic
}

// classifyAddr judges an address.
func (p *Policy) classifyAddr(a netip.Addr) netDest {
	for _, m := range metadataAddrs {
		if a == m {
			return destMetadata
		}
	}
	if a.IsLoopback() || a.IsUnspecified() {
		return destLoopback
	}
	if p.guard.CheckIP(a) != nil {
		return destInternal
	}
	return destPublic
}

// judgeDest refuses connecting to metadata services and private networks
// (unless allowed) and to the container engine's API. A name is judged by
// its spelling and, when the policy has a resolver, by the addresses it
// resolves to now, so that a name in /etc/hosts or a DNS record pointing
// at 169.254.169.254 is refused like the address.
func (c *call) judgeDest(host, port, what string) {
	d := c.j.p.classifyHost(host)
	if d == destPublic && (!c.j.p.allowPrivate || enginePorts[port] || controlPorts[port] != "") {
		rd, addr, ok, over := c.j.resolveDest(host)
		switch {
		case over:
			c.deny("internal_network", what+" names more hosts than the filter looks up to see where they lead: "+host)
			return
		case ok && rd != destPublic:
			d = rd
			host += " (resolves to " + addr.String() + ")"
		}
	}
	if c.j.p.allowPrivate && d != destLoopback {
		return
	}
	switch d {
	case destMetadata:
		c.deny("secrets", what+" reaches a cloud metadata service, which hands out the machine's credentials: "+host)
	case destInternal:
		c.deny("internal_network", what+" reaches a private network address: "+host)
	case destLoopback:
		if enginePorts[port] {
			c.deny("privilege", what+" drives the container engine's API, which is root on the host: "+host+":"+port)
		} else if cat := controlPorts[port]; cat != "" {
			c.deny(cat, what+" reaches the local API of an infrastructure daemon (port "+port+"): "+host)
		}
	}
}

// reAddrPrefix is an IPv4 address whose last parts are only known at run
// time.
var reDottedQuad = lazyre.New(`^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$`)

var reAddrPrefix = lazyre.New(`^\d{1,3}\.(?:\d{1,3}\.){0,2}$`)

// judgeTarget judges a URL or bare host[:port][/path] argument.
func (c *call) judgeTarget(v, what string) {
	if v == "" || strings.HasPrefix(v, "-") {
		return
	}
	if strings.HasPrefix(strings.ToLower(v), "unix:") || strings.HasPrefix(v, "/") {
		if isEngineSocket(v) {
			c.deny("privilege", what+" drives the container engine through its socket: "+v)
		}
		return
	}
	if l := strings.ToLower(v); strings.HasPrefix(l, "gopher://") || strings.HasPrefix(l, "dict://") {
		c.deny("obfuscation", what+" speaks a raw protocol to a server through a "+l[:strings.Index(l, ":")]+":// URL")
	}
	host, port := hostOfTarget(v)
	if host == "" || strings.ContainsAny(host, " \t{}[]*") && !strings.HasPrefix(host, "[") {
		return
	}
	c.judgeDest(host, port, what)
}

// reURLLit finds URLs inside program text.
var reURLLit = lazyre.New(`(?i)\b(?:https?|ftp|wss?|tcp|udp|gopher|dict)://[^\s'"\x60)<>]+`)

// reHostLit is a string literal that is only an address, as in
// socket.connect(("10.0.0.1", 4444)): a dotted quad, an IPv6 address or a
// name of a private network.
var reHostLit = lazyre.New(`^(?:\[?[0-9a-fA-F]*:[0-9a-fA-F:.]+\]?|\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}|[a-zA-Z0-9.-]+\.(?:internal|local|lan|localhost)|metadata(?:\.google\.internal)?)$`)

// judgeCodeDests judges the destinations a program names, when it uses the
// network at all.
func (c *call) judgeCodeDests(lang, code string, lits []string) {
	for _, u := range reURLLit.FindAllString(code, -1) {
		c.judgeTarget(u, lang)
	}
	for _, s := range lits {
		if reHostLit.MatchString(s) {
			c.judgeDest(s, "", lang)
		} else if h, p := splitHostPort(s); p != "" && isNumber(p) && reHostLit.MatchString(h) || p != "" && isNumber(p) && h == "localhost" {
			c.judgeDest(h, p, lang)
		}
		if isEngineSocket(s) {
			c.deny("privilege", lang+" drives the container engine through its socket: "+s)
		}
	}
}
