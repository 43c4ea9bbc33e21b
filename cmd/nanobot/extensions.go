package main

import (
	"net/http"

	"github.com/nanobot-go/nanobot/agent/prompt"
	"github.com/nanobot-go/nanobot/agent/tools"
	"github.com/nanobot-go/nanobot/config"
)

// newPromptSource reads the prompt files and skills of cfg's workspace.
func newPromptSource(cfg *config.Config) *prompt.Source {
	return prompt.New(cfg.Agent.Workspace, cfg.Agent.PromptFileMaxChars, cfg.Tools.RestrictToWorkspace)
}

// webSearch is the web_search tool over the configured backend. The
// backend is the owner's choice: its client is not the URL guard's.
func webSearch(cfg *config.Config) *tools.WebSearch {
	s := cfg.Tools.Web.Search
	return &tools.WebSearch{
		Provider: s.Provider,
		APIKey:   string(s.APIKey),
		URL:      s.URL,
		Timeout:  s.Timeout,
		Client:   &http.Client{Timeout: s.Timeout},
	}
}

// searchStatus is the web search line of `nanobot status`.
func searchStatus(cfg *config.Config) string {
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
