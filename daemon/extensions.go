package daemon

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/admin"
	"github.com/nanobot-go/nanobot/agent/mcp"
	"github.com/nanobot-go/nanobot/agent/prompt"
	"github.com/nanobot-go/nanobot/agent/tools"
	"github.com/nanobot-go/nanobot/config"
	"github.com/nanobot-go/nanobot/safety"
)

// NewPromptSource reads the prompt files and skills of cfg's workspace.
func NewPromptSource(cfg *config.Config) *prompt.Source {
	return prompt.New(cfg.Agent.Workspace, cfg.Agent.PromptFileMaxChars, cfg.Tools.RestrictToWorkspace,
		prompt.WithProtected(protectedPaths(cfg)...))
}

// WebSearch is the web_search tool over the configured backend. The
// backend is the owner's choice: its client is not the URL guard's.
func WebSearch(cfg *config.Config) *tools.WebSearch {
	s := cfg.Tools.Web.Search
	return &tools.WebSearch{
		Provider: s.Provider,
		APIKey:   string(s.APIKey),
		URL:      s.URL,
		Timeout:  s.Timeout,
		Client:   &http.Client{Timeout: s.Timeout},
	}
}

// SearchStatus is the web search line of `nanobot status`.
func SearchStatus(cfg *config.Config) string {
	s := cfg.Tools.Web.Search
	switch {
	case s.Provider == "":
		return "off (tools.web.search.provider is empty)"
	case !cfg.Tools.Web.Enabled:
		return s.Provider + ", but tools.web.enabled is false: not offered"
	case !cfg.SearchReady():
		return s.Provider + ", api key not set: not offered"
	case s.Provider == config.SearchSearXNG:
		return "searxng at " + s.URL
	default:
		return s.Provider + " (api key set)"
	}
}

// newMCP returns the manager of the MCP servers; Apply starts them. When a
// server's tools come or go, the loop gets the new tool set.
func (r *Daemon) newMCP(cfg *config.Config, version string) *mcp.Manager {
	return mcp.New(mcp.Options{
		Logger:          r.logger,
		Approver:        &r.approvals,
		ApprovalTimeout: cfg.Tools.Exec.ApprovalTimeout,
		Changed:         r.refreshTools,
		Version:         version,
	})
}

// refreshTools gives the loop the current tools, MCP servers' included.
func (r *Daemon) refreshTools() {
	r.reconf.Lock()
	defer r.reconf.Unlock()
	cfg := r.Config()
	toolset, err := r.tools(cfg)
	if err != nil {
		r.logger.Error("rebuild the tool set", "err", err)
		return
	}
	r.loop.Reconfigure(r.currentChain(), toolset, AgentConfig(cfg))
	r.logger.Debug("tool set updated", "tools", len(toolset))
}

// mcpServers are the enabled servers of cfg. A stdio server gets the
// environment exec commands get (safety.BaseEnv and tools.exec.env) plus
// its own env.
func mcpServers(cfg *config.Config) []mcp.Server {
	base := safety.CommandEnv(os.Environ(), cfg.Tools.Exec.Env, cfg.Secrets())
	var out []mcp.Server
	for _, name := range slices.Sorted(maps.Keys(cfg.Tools.MCPServers)) {
		s := cfg.Tools.MCPServers[name]
		if !s.Enabled {
			continue
		}
		srv := mcp.Server{Name: name, Command: s.Command, Args: s.Args, URL: s.URL, Timeout: s.Timeout, Tools: s.Tools, Approval: s.Approval}
		if s.Command != "" {
			srv.Env = slices.Clone(base)
			for _, k := range slices.Sorted(maps.Keys(s.Env)) {
				srv.Env = append(srv.Env, k+"="+s.Env[k])
			}
		}
		if len(s.Headers) > 0 {
			srv.Headers = make(map[string]string, len(s.Headers))
			for k, v := range s.Headers {
				srv.Headers[k] = string(v)
			}
		}
		out = append(out, srv)
	}
	return out
}

// mcpDetails are the MCP lines of /readyz: a server that is down does not
// make the daemon unready, but is reported.
func (r *Daemon) mcpDetails(context.Context) []string {
	var out []string
	for _, st := range r.mcp.Status() {
		out = append(out, "mcp "+st.String())
	}
	return out
}

// MCPStatus is `nanobot status`'s view of the MCP servers: what a running
// gateway reports, or else what can be checked without starting them.
func MCPStatus(ctx context.Context, cfg *config.Config) []string {
	if len(cfg.Tools.MCPServers) == 0 {
		return nil
	}
	live := map[string]string{}
	if cfg.Gateway.Listen != "" {
		if lines, err := admin.ReadyDetails(ctx, cfg.Gateway.Listen); err == nil {
			for _, l := range lines {
				if rest, ok := strings.CutPrefix(l, "mcp "); ok {
					name, _, _ := strings.Cut(rest, " ")
					live[name] = rest
				}
			}
		}
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(cfg.Tools.MCPServers)) {
		s := cfg.Tools.MCPServers[name]
		switch {
		case !s.Enabled:
			out = append(out, name+": disabled")
		case live[name] != "":
			out = append(out, live[name]+" (running gateway)")
		case s.URL != "":
			out = append(out, fmt.Sprintf("%s (http): %s, not checked (no running gateway)", name, s.URL))
		default:
			if _, err := exec.LookPath(s.Command); err != nil {
				out = append(out, fmt.Sprintf("%s (stdio): cannot start: %v", name, err))
			} else {
				out = append(out, fmt.Sprintf("%s (stdio): %s found, not started (no running gateway)", name, s.Command))
			}
		}
	}
	return out
}

// waitForMCP gives a one-shot command's servers a moment to start, so that
// its single turn has their tools.
func (r *Daemon) WaitForMCP(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r.mcp.WaitStarted(ctx)
	r.refreshTools() // now, not when the change notice arrives
}
