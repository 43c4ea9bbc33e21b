package config

import (
	"net/url"
	"strings"
)

// WebConsole configures the owner's web console the gateway serves: a chat
// with the assistant and a dashboard of the daemon. The owner signs in
// with a one-time link from Telegram's /web or `nanobot web login`.
type WebConsole struct {
	Listen string `yaml:"listen"` // host:port; empty = off
	// PublicURL is the https:// address of the TLS proxy in front of the
	// console; needed to listen on an address other machines reach.
	PublicURL string `yaml:"public_url"`
}

func (c *Config) checkWebConsole(k *checker) {
	w := c.WebConsole
	if w.PublicURL != "" {
		u, err := url.Parse(w.PublicURL)
		switch {
		case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
			k.fail("web.public_url", "must be the console's address behind the proxy, like https://bot.example.com, not %s",
				k.c.quote("web.public_url", w.PublicURL))
		case u.Scheme == "http" && !LoopbackListen(hostPort(u)):
			k.fail("web.public_url", "must be https:// (a TLS proxy in front): over plain http the session cookie crosses the network readable")
		case strings.TrimRight(u.Path, "/") != "" || u.RawQuery != "":
			k.fail("web.public_url", "must be the address of the proxy's root, without a path: the console's pages live at /")
		}
	}
	if w.Listen == "" {
		return
	}
	k.listen("web.listen", w.Listen)
	if validListen(w.Listen) && !LoopbackListen(w.Listen) && w.PublicURL == "" {
		k.fail("web.listen", "%s takes connections from other machines: put a TLS proxy in front and set web.public_url "+
			"to its https:// address (or listen on 127.0.0.1)", k.c.quote("web.listen", w.Listen))
	}
}

func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	return u.Host + ":80"
}
