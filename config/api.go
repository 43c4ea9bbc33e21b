package config

import (
	"fmt"
	"strings"

	"github.com/nanobot-go/nanobot/internal/lazyre"
	"github.com/nanobot-go/nanobot/internal/loopback"
)

// API configures the OpenAI-compatible API the gateway serves to other
// apps (POST /v1/chat/completions, GET /v1/models).
type API struct {
	Listen string   `yaml:"listen"` // host:port; empty = off
	Keys   []APIKey `yaml:"keys"`
}

// APIKey is one client of the API: a bearer key, the name it is known by
// in logs and metrics, and the chat it talks in (its own session and
// daily budget, and its own MEMORY under memory.scope: chat).
type APIKey struct {
	Key  Secret `yaml:"key"`
	Name string `yaml:"name"`
	Chat string `yaml:"chat"` // empty = Name
}

// ChatName is the chat the key talks in.
func (k APIKey) ChatName() string {
	if k.Chat != "" {
		return k.Chat
	}
	return k.Name
}

// minAPIKeyLen is the shortest key accepted: a guessable key is no key.
const minAPIKeyLen = 16

var apiName = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// LoopbackListen reports whether a host:port only takes connections from
// this machine.
func LoopbackListen(addr string) bool { return loopback.Only(addr) }

func (c *Config) checkAPI(k *checker) {
	a := c.API
	if a.Listen != "" {
		k.listen("api.listen", a.Listen)
		if validListen(a.Listen) && !LoopbackListen(a.Listen) && len(a.Keys) == 0 {
			k.fail("api.listen", "%s takes connections from other machines: add at least one key to api.keys "+
				"(or listen on 127.0.0.1)", k.c.quote("api.listen", a.Listen))
		}
	}
	names, chats, keys := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for i, key := range a.Keys {
		at := fmt.Sprintf("api.keys[%d]", i)
		switch s := string(key.Key); {
		case s == "":
			k.fail(at+".key", "must not be empty (write it as ${VAR} and set the variable)")
		case len(s) < minAPIKeyLen:
			k.fail(at+".key", "is %d characters; use at least %d random ones (openssl rand -hex 24)", len(s), minAPIKeyLen)
		case strings.ContainsAny(s, " \t\r\n"):
			k.fail(at+".key", "must not contain spaces")
		case keys[s]:
			k.fail(at+".key", "is the key of an earlier entry: each client needs its own")
		}
		keys[string(key.Key)] = true
		if !apiName.MatchString(key.Name) {
			k.fail(at+".name", "must be a short name of letters, digits, '.', '_' or '-', not %q", key.Name)
		} else if names[key.Name] {
			k.fail(at+".name", "%q is the name of an earlier entry", key.Name)
		}
		names[key.Name] = true
		if key.Chat != "" && !apiName.MatchString(key.Chat) {
			k.fail(at+".chat", "must be a short name of letters, digits, '.', '_' or '-', not %q", key.Chat)
		}
		if chats[key.ChatName()] {
			k.fail(at+".chat", "%q is the chat of an earlier key: each key talks in its own chat", key.ChatName())
		}
		chats[key.ChatName()] = true
	}
}
