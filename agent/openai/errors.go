package openai

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/nanobot-go/nanobot/internal/lazyre"
)

// Error is a failed model call, described in a short sentence that is safe to
// show the user: it never contains the API key or a request URL.
type Error struct {
	// Status is the HTTP status of the last attempt, 0 when no response
	// arrived (network error, timeout, cancellation).
	Status int
	// Message is the user-safe sentence.
	Message string
	// Attempts is how many requests were sent.
	Attempts int
	// Transient says the endpoint failed rather than refused this request:
	// it could not be reached, timed out, was overloaded or failed (429,
	// 5xx), or sent a reply that could not be read. Another endpoint may
	// answer it.
	Transient bool

	err   error // the cause worth matching (context errors, agent.ErrContextOverflow), never printed
	limit int   // the context window the endpoint named, when it refused the request as too large
}

// Error returns the user-safe message.
func (e *Error) Error() string { return e.Message }

// Unwrap lets callers match context.Canceled, context.DeadlineExceeded and
// agent.ErrContextOverflow.
func (e *Error) Unwrap() error { return e.err }

// ContextLimit is the context window the endpoint named when it refused the
// request as too large (0: not named).
func (e *Error) ContextLimit() int { return e.limit }

// contextOverflow recognises an endpoint's refusal of a request as larger
// than its context window, in the words the common servers use (OpenAI,
// vLLM, llama.cpp, Ollama, Anthropic-compatible gateways).
var contextOverflow = lazyre.New(`(?i)context[_ ]length|context window|maximum context|too many tokens|prompt is too long|input is too long|reduce the length|exceeds? the (model's |available )?(max(imum)? )?context`)

// contextLimit finds the window a refusal names ("maximum context length is
// 8192 tokens").
var contextLimit = lazyre.New(`(?i)(?:context length|context window|context size|maximum context)[^0-9]{0,40}?(\d{3,7})`)

func parseContextLimit(detail string) int {
	m := contextLimit.FindStringSubmatch(detail)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// redactor replaces the API key wherever it could leak into text.
type redactor struct{ secret string }

func (r redactor) redact(s string) string {
	if len(r.secret) < 4 {
		return s
	}
	return strings.ReplaceAll(s, r.secret, "REDACTED")
}

// maxDetail bounds how much of a server's own error message reaches the user.
const maxDetail = 200

func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}

// statusMessage describes a final HTTP failure. detail is the server's own
// message, already redacted.
func statusMessage(status int, detail string, n int) string {
	var s string
	switch {
	case status == 429:
		s = fmt.Sprintf("the model service is overloaded (HTTP 429) after %s", attempts(n))
	case status >= 500:
		s = fmt.Sprintf("the model service failed (HTTP %d) after %s", status, attempts(n))
	case status == 401 || status == 403:
		s = fmt.Sprintf("the model service refused the API key (HTTP %d)", status)
	case status == 404:
		s = "the model service does not know this model or endpoint (HTTP 404); check provider.base_url and provider.model"
	case status == 408:
		s = fmt.Sprintf("the model service timed out (HTTP 408) after %s", attempts(n))
	default:
		s = fmt.Sprintf("the model service rejected the request (HTTP %d)", status)
	}
	if detail != "" && status != 401 && status != 403 {
		s += ": " + truncate(detail, maxDetail)
	}
	return s
}

// networkReason names a transport failure without the request URL.
func networkReason(err error) string {
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return "host " + dnsErr.Name + " not found"
		}
		return "name resolution failed"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "network unreachable"
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Err != nil {
		return opErr.Err.Error()
	}
	var urlErr *url.Error // its text would include the URL
	if errors.As(err, &urlErr) {
		return urlErr.Err.Error()
	}
	return err.Error()
}

// UserMessage is the sentence to show the user; the loop looks for it.
func (e *Error) UserMessage() string { return e.Message }
