package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/agent"
)

// Search backends of web_search.
const (
	SearchBrave   = "brave"
	SearchSearXNG = "searxng"
	SearchTavily  = "tavily"
)

// The endpoints of the hosted backends.
const (
	braveURL  = "https://api.search.brave.com/res/v1/web/search"
	tavilyURL = "https://api.tavily.com/search"
)

// Limits of web_search.
const (
	defaultSearchCount   = 5
	maxSearchCount       = 10
	defaultSearchTimeout = 15 * time.Second
	maxSearchBody        = 1 << 20
	maxSnippet           = 400
)

// WebSearch is the web_search tool: a query sent to the backend the owner
// configured. Its endpoint is the owner's choice, so it is not subject to
// the URL guard that keeps model-chosen URLs off private addresses.
type WebSearch struct {
	// Provider is SearchBrave, SearchSearXNG or SearchTavily.
	Provider string
	// APIKey authenticates with brave and tavily.
	APIKey string
	// URL is the SearXNG instance; for brave and tavily it replaces their
	// API endpoint when set.
	URL string
	// Timeout bounds one search; defaultSearchTimeout when zero.
	Timeout time.Duration
	// Client sends the requests; http.DefaultClient's transport when nil.
	Client *http.Client
}

var _ agent.ReadOnlyTool = (*WebSearch)(nil)

// ReadOnly reports that web_search changes nothing: its calls of a reply
// run in parallel.
func (*WebSearch) ReadOnly() bool { return true }

type webSearchParams struct {
	Query string `json:"query"`
	Count int    `json:"count"`
}

// searchResult is one hit, whatever the backend.
type searchResult struct {
	Title, URL, Snippet string
}

// Spec describes web_search.
func (w *WebSearch) Spec() agent.ToolSpec {
	return agent.ToolSpec{
		Name:        "web_search",
		Description: "Search the web. Returns a numbered list of results: title, URL and snippet. Use web_fetch to read a result.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "query": {"type": "string", "description": "What to search for."},
    "count": {"type": "integer", "minimum": 1, "maximum": 10, "description": "How many results; 5 when omitted."}
  },
  "required": ["query"],
  "additionalProperties": false
}`),
	}
}

// Run searches.
func (w *WebSearch) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var p webSearchParams
	if err := decodeArgs(args, &p); err != nil {
		return "", err
	}
	query := strings.TrimSpace(p.Query)
	if query == "" {
		return "", errors.New(`"query" is required`)
	}
	count := p.Count
	if count <= 0 {
		count = defaultSearchCount
	}
	count = min(count, maxSearchCount)
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = defaultSearchTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	req, err := w.request(ctx, query, count)
	if err != nil {
		return "", err
	}
	results, err := w.send(req, timeout)
	if err != nil {
		return "", err
	}
	if len(results) > count {
		results = results[:count]
	}
	return renderResults(query, results), nil
}

// request builds the backend's own request for query.
func (w *WebSearch) request(ctx context.Context, query string, count int) (*http.Request, error) {
	endpoint := func(def string) string {
		if w.URL != "" {
			return w.URL
		}
		return def
	}
	var req *http.Request
	var err error
	switch w.Provider {
	case SearchBrave:
		u := endpoint(braveURL) + "?" + url.Values{"q": {query}, "count": {fmt.Sprint(count)}}.Encode()
		if req, err = http.NewRequestWithContext(ctx, http.MethodGet, u, nil); err == nil {
			req.Header.Set("X-Subscription-Token", w.APIKey)
		}
	case SearchSearXNG:
		base := strings.TrimRight(w.URL, "/")
		if !strings.HasSuffix(base, "/search") {
			base += "/search"
		}
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, base+"?"+url.Values{"q": {query}, "format": {"json"}}.Encode(), nil)
	case SearchTavily:
		body, _ := json.Marshal(map[string]any{"api_key": w.APIKey, "query": query, "max_results": count, "search_depth": "basic"})
		if req, err = http.NewRequestWithContext(ctx, http.MethodPost, endpoint(tavilyURL), bytes.NewReader(body)); err == nil {
			req.Header.Set("Content-Type", "application/json")
		}
	default:
		return nil, fmt.Errorf("web search is not configured (tools.web.search.provider is %q)", w.Provider)
	}
	if err != nil {
		return nil, fmt.Errorf("web search: invalid endpoint: %w", errors.Unwrap(err))
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "nanobot/1 (web_search)")
	return req, nil
}

// send makes the request and decodes the backend's answer. Its errors are
// short sentences for the model and never hold the key.
func (w *WebSearch) send(req *http.Request, timeout time.Duration) ([]searchResult, error) {
	client := w.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			return nil, fmt.Errorf("web search timed out after %s (%s did not answer); try again later, or answer without searching", fmtDuration(timeout), w.Provider)
		}
		if req.Context().Err() != nil {
			return nil, fmt.Errorf("web search stopped: %w", req.Context().Err())
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL may carry a password
		}
		return nil, fmt.Errorf("web search: %s cannot be reached: %v", w.Provider, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSearchBody))
	if err != nil {
		return nil, fmt.Errorf("web search: reading the answer of %s: %v", w.Provider, err)
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden && w.Provider != SearchSearXNG:
		return nil, fmt.Errorf("web search failed: %s refused the API key (%s); the owner must check tools.web.search.api_key", w.Provider, resp.Status)
	case resp.StatusCode == http.StatusForbidden:
		return nil, fmt.Errorf("web search failed: the SearXNG instance refused the request (%s); its settings must allow the json format", resp.Status)
	case resp.StatusCode == http.StatusTooManyRequests:
		wait := ""
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
			wait = fmt.Sprintf(" (retry after %d seconds)", secs)
		}
		return nil, fmt.Errorf("web search is rate limited by %s%s; search less often, or answer without searching", w.Provider, wait)
	case resp.StatusCode >= 300:
		return nil, fmt.Errorf("web search failed: %s answered %s", w.Provider, resp.Status)
	}
	results, err := decodeResults(w.Provider, body)
	if err != nil {
		return nil, fmt.Errorf("web search: %s sent an answer that is not its JSON: %v", w.Provider, err)
	}
	return results, nil
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// decodeResults reads the backend's response shape: Brave's web.results
// (title, url, description), SearXNG's and Tavily's results (title, url,
// content).
func decodeResults(provider string, body []byte) ([]searchResult, error) {
	type hit struct {
		Title       string `json:"title"`
		URL         string `json:"url"`
		Description string `json:"description"`
		Content     string `json:"content"`
	}
	var r struct {
		Web struct {
			Results []hit `json:"results"`
		} `json:"web"`
		Results []hit `json:"results"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	hits := r.Results
	if provider == SearchBrave {
		hits = r.Web.Results
	}
	out := make([]searchResult, 0, len(hits))
	for _, h := range hits {
		snippet := h.Content
		if provider == SearchBrave {
			snippet = h.Description
		}
		out = append(out, searchResult{Title: plainText(h.Title), URL: strings.TrimSpace(h.URL), Snippet: firstRunes(plainText(snippet), maxSnippet)})
	}
	return out, nil
}

var tags = regexp.MustCompile(`<[^>]*>`)

// plainText drops the highlighting tags backends put in titles and
// snippets (<strong>), decodes entities and squeezes whitespace.
func plainText(s string) string {
	return strings.Join(strings.Fields(html.UnescapeString(tags.ReplaceAllString(s, ""))), " ")
}

// renderResults is the compact numbered list the model gets, marked as
// content from outside.
func renderResults(query string, results []searchResult) string {
	if len(results) == 0 {
		return fmt.Sprintf("No results for %q.", query)
	}
	var b strings.Builder
	for i, r := range results {
		fmt.Fprintf(&b, "%d. %s\n   %s\n", i+1, r.Title, r.URL)
		if r.Snippet != "" {
			fmt.Fprintf(&b, "   %s\n", r.Snippet)
		}
	}
	return fmt.Sprintf("Results for %q:\n", query) + agent.Untrusted(b.String())
}
