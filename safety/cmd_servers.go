package safety

import (
	"strings"
)

// Development servers usually listen on loopback by default and run as
// part of ordinary work. Told explicitly which address to listen on (and
// so possibly every interface), they are asked about like python -m
// http.server --bind.

func registerServerHandlers(reg func(handler, ...string)) {
	reg((*call).tunnel, "ngrok", "cloudflared", "lt", "localtunnel", "bore", "frpc", "chisel", "serveo", "pagekite", "tailscale", "zrok")
	reg((*call).listener, "iperf", "iperf3", "http-server", "httpd", "jupyter", "jupyter-notebook", "jupyter-lab")
	reg((*call).gtfo, "xterm")
	reg((*call).devServer, "flask", "uvicorn", "gunicorn", "hypercorn", "daphne", "waitress-serve", "hugo", "jekyll",
		"mkdocs", "next", "vite", "webpack", "ng", "streamlit", "serve", "live-server", "caddy", "ttyd", "gotty")
}

// listenOpts name the address a server listens on.
var listenOpts = []string{"--host", "--bind", "-b", "--ip", "--listen", "--address", "--addr", "--server.address", "--interface"}

// listensExplicitly reports whether args give a listen address.
func listensExplicitly(args []arg) bool {
	for _, a := range args {
		for _, o := range listenOpts {
			if a.val == o || strings.HasPrefix(a.val, o+"=") {
				return true
			}
		}
	}
	return false
}

func (c *call) devServer() outcome {
	switch c.name {
	case "ttyd", "gotty":
		c.deny("reverse_shell", c.name+" serves a terminal over the network")
		return genericScan
	case "hugo", "mkdocs":
		if len(c.argv) > 1 && (c.argv[1].val == "deploy" || c.argv[1].val == "gh-deploy") {
			c.ask("publish", c.name+" "+c.argv[1].val+" publishes the site")
			return genericScan
		}
	case "caddy":
		if len(c.argv) > 1 && (c.argv[1].val == "file-server" || c.argv[1].val == "reverse-proxy") {
			c.ask("network_listener", "caddy "+c.argv[1].val+" starts a server")
		}
		return genericScan
	}
	if listensExplicitly(c.argv[1:]) {
		c.ask("network_listener", c.name+" starts a server on an address it is given")
	}
	return genericScan
}

// scriptServer asks about package scripts told where to listen (npm run
// dev -- --host 0.0.0.0).
func (c *call) scriptServer(ops []arg) {
	if len(ops) > 1 && (ops[0].val == "run" || ops[0].val == "run-script" || ops[0].val == "dev" || ops[0].val == "start") && listensExplicitly(ops[1:]) {
		c.ask("network_listener", c.name+" runs a server on an address it is given")
	}
}

func (c *call) tunnel() outcome {
	if c.name == "tailscale" {
		args := " " + strings.Join(argTexts(c.argv[1:]), " ") + " "
		if !strings.Contains(args, " funnel ") && !strings.Contains(args, " serve ") {
			return genericScan
		}
	}
	c.deny("reverse_shell", c.name+" exposes this machine to the internet through a tunnel")
	return genericScan
}

func (c *call) listener() outcome {
	args := " " + strings.Join(argTexts(c.argv[1:]), " ") + " "
	switch c.name {
	case "iperf", "iperf3":
		if !strings.Contains(args, " -s ") && !strings.Contains(args, " --server ") {
			return genericScan
		}
	case "jupyter", "jupyter-notebook", "jupyter-lab":
		if !strings.Contains(args, "0.0.0.0") && !strings.Contains(args, "--ip=*") && !strings.Contains(args, "::") && !listensExplicitly(c.argv[1:]) {
			return genericScan
		}
	}
	c.ask("network_listener", c.name+" listens for network connections")
	return genericScan
}

func (c *call) gtfo() outcome {
	for _, a := range c.argv[1:] {
		if a.val == "-display" {
			c.deny("reverse_shell", "xterm to a remote display")
		}
	}
	return genericScan
}
