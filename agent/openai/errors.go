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
// than its context window by what such refusals talk about (the tokens,
// length or context of the input) and how (it exceeds a maximum, a limit,
// a range), rather than by the sentences of particular servers: OpenAI,
// vLLM, llama.cpp, Ollama, Anthropic-style gateways, Gemini ("input token
// count ... exceeds the maximum number of tokens allowed"), xAI ("maximum
// prompt length is ... but the request contains"), Moonshot ("exceeded
// model token limit"), DashScope ("Range of input length should be").
var (
	overflowTopic = lazyre.New(`(?i)token|length|context|prompt is too long|input is too long`)
	overflowHow   = lazyre.New(`(?i)exceed|maximum|max length|too (long|large|many)|limit|range of input|reduce the length|context (length|window|size)`)
	// A refusal of the max_tokens parameter itself is not an overflow of
	// the input, unless it also speaks of the input.
	maxTokensParam = lazyre.New(`(?i)max_(completion_|output_)?tokens`)
	inputWords     = lazyre.New(`(?i)context|prompt|input|messages`)
)

func isOverflow(detail string) bool {
	if !overflowTopic.MatchString(detail) || !overflowHow.MatchString(detail) {
		return false
	}
	return !maxTokensParam.MatchString(detail) || inputWords.MatchString(detail)
}

// contextLimit finds the window a refusal names ("maximum context length is
// 8192 tokens", "tokens allowed (1048576)", "should be [1, 30720]").
var contextLimit = lazyre.New(`(?i)(?:context length|context window|context size|maximum context|maximum prompt length|token limit|tokens allowed|max length|input length should be \[\d+,)[^0-9]{0,40}?(\d{3,8})`)

// overLimit is a refusal written as a comparison ("max length: 9000 >
// 8192"): the limit is on the right.
var overLimit = lazyre.New(`(\d{3,8})\s*>\s*(\d{3,8})`)

func parseContextLimit(detail string) int {
	if m := overLimit.FindStringSubmatch(detail); m != nil {
		n, _ := strconv.Atoi(m[2])
		return n
	}
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

// refusedField and refusedWord recognise an endpoint's refusal of a field
// it does not know, naming one the wire layer adds.
var (
	refusedField = lazyre.New(`(?i)reasoning|extra_content|thought_signature|prompt_cache_key|cache_control`)
	refusedWord  = lazyre.New(`(?i)unsupported|not permitted|unrecogni[sz]ed|unknown|additional propert|extra (inputs|fields)|not allowed|unexpected|extra_forbidden`)
)

// refusedTemperature reports whether err is a refusal of the request's
// temperature ("invalid temperature: only 1 is allowed for this model",
// "Unsupported value: 'temperature' does not support 0.2").
func refusedTemperature(err error) bool {
	var e *Error
	return errors.As(err, &e) && (e.Status == 400 || e.Status == 422) && strings.Contains(strings.ToLower(e.Message), "temperature")
}

// refusedAdditions reports whether err is a refusal of the request for
// fields the wire layer added to it.
func refusedAdditions(err error) bool {
	var e *Error
	if !errors.As(err, &e) || (e.Status != 400 && e.Status != 422) {
		return false
	}
	return refusedField.MatchString(e.Message) && refusedWord.MatchString(e.Message)
}
