package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/safety"
)

// Defaults and limits of web_fetch.
const (
	DefaultWebMaxBytes = 2 << 20
	defaultWebChars    = 20000
	maxWebChars        = 100000
	defaultWebTimeout  = 30 * time.Second
)

// Web is the web_fetch tool: GET a page and return its readable part (the
// article, without navigation, scripts or ads) as Markdown or plain text.
type Web struct {
	// Client makes the requests; it should come from
	// safety.NewURLGuard(allowPrivate).HTTPClient(timeout) so that private
	// addresses stay unreachable. When nil, such a client is built that
	// refuses private addresses.
	Client *http.Client
	// MaxBytes is how much of a response body is read;
	// DefaultWebMaxBytes when zero.
	MaxBytes int64
}

var _ agent.ReadOnlyTool = (*Web)(nil)

// ReadOnly reports that web_fetch changes nothing here: its calls of a
// reply run in parallel.
func (*Web) ReadOnly() bool { return true }

// Output modes of web_fetch.
const (
	webMarkdown = "markdown"
	webText     = "text"
)

type webFetchParams struct {
	URL      string `json:"url"`
	Mode     string `json:"mode"`
	MaxChars int    `json:"max_chars"`
}

// Spec describes web_fetch.
func (w *Web) Spec() agent.ToolSpec {
	return agent.ToolSpec{
		Name:        "web_fetch",
		Description: "Fetch an http(s) URL. HTML comes back as its title and main content (no navigation, scripts or ads), in Markdown or plain text.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "url": {"type": "string"},
    "mode": {"type": "string", "enum": ["markdown", "text"], "description": "Default markdown."},
    "max_chars": {"type": "integer", "minimum": 1, "maximum": 100000, "description": "Default 20000."}
  },
  "required": ["url"],
  "additionalProperties": false
}`),
	}
}

// Run fetches the page.
func (w *Web) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var p webFetchParams
	if err := decodeArgs(args, &p); err != nil {
		return "", err
	}
	u, limit, err := p.validate()
	if err != nil {
		return "", err
	}
	page, err := w.fetch(ctx, u)
	if err != nil {
		return "", err
	}
	mode := p.Mode
	if page.status >= 400 {
		mode = webText
	}
	text, kind, err := bodyText(page.contentType, page.body, page.url, mode)
	if err != nil {
		return "", fmt.Errorf("%s: %w", displayURL(page.url), err)
	}
	if page.status >= 400 {
		return "", fmt.Errorf("%s answered %s: %s", displayURL(page.url), page.statusText, firstRunes(strings.Join(strings.Fields(text), " "), 300))
	}
	return page.result(text, kind, limit), nil
}

// validate checks the arguments, settles p.Mode's default and returns the URL and the character limit.
func (p *webFetchParams) validate() (*url.URL, int, error) {
	u, err := parseWebURL(p.URL)
	if err != nil {
		return nil, 0, err
	}
	switch p.Mode {
	case "":
		p.Mode = webMarkdown
	case webMarkdown, webText:
	default:
		return nil, 0, fmt.Errorf(`invalid arguments: "mode" must be "markdown" or "text", not %q`, p.Mode)
	}
	limit := p.MaxChars
	if limit <= 0 {
		limit = defaultWebChars
	}
	return u, min(limit, maxWebChars), nil
}

// fetchedPage is a response read up to the byte limit.
type fetchedPage struct {
	url         *url.URL // after redirects
	status      int
	statusText  string
	contentType string
	body        []byte
	maxBytes    int64
	cutBytes    bool // the body was longer than maxBytes
}

// fetch GETs u and reads at most w.MaxBytes of its body.
func (w *Web) fetch(ctx context.Context, u *url.URL) (fetchedPage, error) {
	maxBytes := w.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultWebMaxBytes
	}
	client := w.Client
	if client == nil {
		client = safety.NewURLGuard(false).HTTPClient(defaultWebTimeout)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fetchedPage{}, fmt.Errorf("invalid url: %w", err)
	}
	req.Header.Set("User-Agent", "nanobot/1 (web_fetch)")
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.5")
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fetchedPage{}, fmt.Errorf("fetch %s: %w", displayURL(u), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		return fetchedPage{}, fmt.Errorf("read %s: %w", displayURL(u), err)
	}
	page := fetchedPage{url: u, status: resp.StatusCode, statusText: resp.Status,
		contentType: resp.Header.Get("Content-Type"), body: body, maxBytes: maxBytes}
	if int64(len(body)) > maxBytes {
		page.body, page.cutBytes = trimPartialRune(body[:maxBytes]), true
	}
	if resp.Request != nil && resp.Request.URL != nil {
		page.url = resp.Request.URL
	}
	return page, nil
}

// result is what the model sees: a header, the text marked untrusted and cut to limit characters,
// and a note for each cut.
func (page fetchedPage) result(text, kind string, limit int) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "URL: %s\nContent-Type: %s\n\n", displayURL(page.url), kind)
	n := utf8.RuneCountInString(text)
	if n > limit {
		text = firstRunes(text, limit)
	}
	sb.WriteString(agent.Untrusted(text))
	if n > limit {
		fmt.Fprintf(&sb, "\n… [cut: showing the first %d of %d characters; ask with a larger max_chars for more]", limit, n)
	}
	if page.cutBytes {
		fmt.Fprintf(&sb, "\n… [the response is larger than %d bytes; only its beginning was read]", page.maxBytes)
	}
	return sb.String()
}

// parseWebURL accepts absolute http and https URLs only.
func parseWebURL(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, errors.New(`"url" is required`)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("invalid url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("invalid url %q: it must start with http:// or https://", raw)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("invalid url %q: no host", raw)
	}
	return u, nil
}

// displayURL renders u without any user name or password in it.
func displayURL(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}

// bodyText turns a response body into text according to its content type,
// refusing what is not text. HTML gives its readable part in mode.
func bodyText(contentType string, body []byte, page *url.URL, mode string) (text, kind string, err error) {
	mt, params, _ := mime.ParseMediaType(contentType)
	if mt == "" || mt == "application/octet-stream" {
		mt, params, _ = mime.ParseMediaType(http.DetectContentType(body))
	}
	isHTML := mt == "text/html" || mt == "application/xhtml+xml"
	if !isHTML && !textual(mt) {
		return "", mt, fmt.Errorf("unsupported content type %s (%d bytes); web_fetch returns text and HTML only", mt, len(body))
	}
	if bytes.IndexByte(body, 0) >= 0 {
		return "", mt, fmt.Errorf("the %s response looks binary; web_fetch returns text and HTML only", mt)
	}
	if isHTML {
		return readable(body, contentType, page, mode), mt, nil
	}
	return decodeCharset(body, params["charset"]), mt, nil
}

// textual reports whether a media type is text worth returning as it is.
func textual(mt string) bool {
	switch {
	case strings.HasPrefix(mt, "text/"),
		strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"):
		return true
	}
	switch mt {
	case "application/json", "application/xml", "application/javascript", "application/ecmascript",
		"application/x-yaml", "application/yaml", "application/toml", "application/x-sh", "application/sql":
		return true
	}
	return false
}

// decodeCharset returns body as UTF-8. Latin-1 is converted; anything else is
// taken as UTF-8 with invalid bytes replaced.
func decodeCharset(body []byte, charset string) string {
	switch strings.ToLower(charset) {
	case "iso-8859-1", "latin1", "latin-1", "windows-1252", "cp1252":
		if !utf8.Valid(body) {
			r := make([]rune, len(body))
			for i, b := range body {
				r[i] = rune(b)
			}
			return string(r)
		}
	}
	return strings.ToValidUTF8(string(body), "\uFFFD")
}
