// Package loopback tells a listen address that only this machine reaches,
// and how a client on this machine dials one.
package loopback

import (
	"net"
	"strings"
)

// Only reports whether host:port takes connections from this machine
// alone: localhost or a loopback IP. An empty host (every interface) is
// not.
func Only(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Dialable is a listen address as a client on this machine dials it: an
// address of every interface is reached on loopback.
func Dialable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return net.JoinHostPort(host, port)
}
