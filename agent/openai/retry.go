package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/nanobot-go/nanobot/agent"
)

// attemptInfo collects what go-openai does not return: the headers telling
// us how long to wait, and the reply as it came (for the fields its types
// drop).
type attemptInfo struct {
	retryAfter   string
	retryAfterMS string
	reply        []byte
}

type attemptKey struct{}

// wireTransport is the HTTP transport of the client (see wire.go). It
// fills the attemptInfo carried by the request context; http.Client calls
// RoundTrip on the caller's goroutine, so no lock is needed.
type wireTransport struct{ base http.RoundTripper }

func (w wireTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return roundTrip(w.base, req)
}

// failure is one failed attempt, classified.
type failure struct {
	status    int
	retryable bool
	// transient: the endpoint failed (another may answer); see Error.
	transient bool
	// overflow: the request is larger than the endpoint's window, which
	// it named as limit (0: not named).
	overflow bool
	limit    int
	// refused: the endpoint refused this request as it is (400, 422...);
	// sending it again, here or elsewhere, would not help.
	refused bool
	// describe words the final error; n is the number of attempts made.
	describe func(n int) string
	// reason is a short redacted text for the retry log line.
	reason string
}

// retry runs call until it succeeds, fails for good, or the retries are
// spent, waiting between attempts. Every error it returns is *Error.
func (p *Provider) retry(ctx context.Context, op string, call func(context.Context) error) error {
	for attempt := 1; ; attempt++ {
		info := &attemptInfo{}
		actx := context.WithValue(ctx, attemptKey{}, info)
		cancel := context.CancelFunc(func() {})
		if p.cfg.Timeout > 0 {
			actx, cancel = context.WithTimeout(actx, p.cfg.Timeout)
		}
		err := call(actx)
		timedOut := actx.Err() != nil
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return canceled(ctx.Err(), attempt)
		}
		f := p.classify(err, timedOut)
		if !f.retryable || attempt > p.cfg.MaxRetries {
			return f.err(attempt)
		}
		delay := p.delay(attempt, info)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < delay {
			// Waiting would only end in the caller's deadline; say what
			// actually went wrong instead.
			return f.err(attempt)
		}
		log := p.log
		if t, ok := agent.TurnFrom(ctx); ok {
			log = log.With("turn_id", t.ID, "session", t.Session)
		}
		log.Warn("model call failed, retrying", "op", op, "status", f.status,
			"attempt", attempt, "max_attempts", p.cfg.MaxRetries+1, "delay", delay, "error", f.reason)
		if err := p.sleep(ctx, delay); err != nil {
			return canceled(err, attempt)
		}
	}
}

func (f failure) err(attempts int) *Error {
	e := &Error{Status: f.status, Message: f.describe(attempts), Attempts: attempts, Transient: f.retryable || f.transient}
	switch {
	case f.overflow:
		e.err, e.limit = agent.ErrContextOverflow, f.limit
	case f.refused:
		e.err = agent.ErrRequestRefused
	}
	return e
}

func canceled(err error, n int) *Error {
	msg := "the model call was canceled"
	if errors.Is(err, context.DeadlineExceeded) {
		msg = "the model call ran out of time"
	}
	return &Error{Message: msg, Attempts: n, err: err}
}

// classify decides whether err is worth another attempt and how to tell
// the user about it.
func (p *Provider) classify(err error, timedOut bool) failure {
	if timedOut {
		return failure{
			retryable: true,
			reason:    "timeout",
			describe: func(n int) string {
				return fmt.Sprintf("the model service did not answer within %s (%s)", p.cfg.Timeout, attempts(n))
			},
		}
	}
	if status, detail, code, ok := httpFailure(err); ok {
		detail = p.red.redact(detail)
		f := failure{
			status: status,
			// Groq's tool_use_failed: the model wrote a call the server
			// could not parse; another sample usually succeeds.
			retryable: status == 408 || status == 409 || status == 429 || status >= 500 || code == "tool_use_failed",
			reason:    truncate(detail, maxDetail),
			describe:  func(n int) string { return statusMessage(status, detail, n) },
		}
		switch {
		case (status == 400 || status == 413) && isOverflow(detail):
			f.overflow, f.limit = true, parseContextLimit(detail)
		case !f.retryable && (status == 400 || status == 413 || status == 415 || status == 422):
			f.refused = true
		}
		return f
	}
	if errors.Is(err, errNoChoices) {
		return failure{transient: true, describe: func(int) string { return errNoChoices.Error() }}
	}
	var (
		urlErr *url.Error
		netErr net.Error
	)
	if errors.As(err, &urlErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		reason := truncate(p.red.redact(networkReason(err)), maxDetail)
		return failure{
			retryable: true,
			reason:    reason,
			describe: func(n int) string {
				return fmt.Sprintf("the model service could not be reached: %s (%s)", reason, attempts(n))
			},
		}
	}
	var (
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
	)
	if errors.As(err, &syntaxErr) || errors.As(err, &typeErr) {
		return failure{transient: true, describe: func(int) string { return "the model service sent a reply that could not be read" }}
	}
	// What is left is go-openai refusing the request before sending it.
	reason := truncate(p.red.redact(err.Error()), maxDetail)
	return failure{
		reason:   reason,
		describe: func(int) string { return "the model request is invalid: " + reason },
	}
}

// httpFailure extracts the status and the server's own message from
// go-openai's error types.
func httpFailure(err error) (status int, detail, code string, ok bool) {
	var apiErr *goopenai.APIError
	if errors.As(err, &apiErr) && apiErr.HTTPStatusCode != 0 {
		if c, isString := apiErr.Code.(string); isString {
			code = c
		}
		return apiErr.HTTPStatusCode, apiErr.Message, code, true
	}
	var reqErr *goopenai.RequestError
	if errors.As(err, &reqErr) && reqErr.HTTPStatusCode != 0 {
		body := strings.TrimSpace(string(reqErr.Body))
		if strings.HasPrefix(body, "<") { // an HTML error page says nothing useful
			body = ""
		}
		return reqErr.HTTPStatusCode, body, "", true
	}
	return 0, "", "", false
}

// delay is how long to wait after the given failed attempt: what the
// server asked for, else full jitter over an exponential ceiling.
func (p *Provider) delay(attempt int, info *attemptInfo) time.Duration {
	if d, ok := parseRetryAfterMS(info.retryAfterMS); ok {
		return d
	}
	if d, ok := parseRetryAfter(info.retryAfter, time.Now()); ok {
		return d
	}
	ceiling := p.backoffMax
	if shift := attempt - 1; shift < 32 {
		if c := p.backoffBase << shift; c > 0 && c < ceiling {
			ceiling = c
		}
	}
	if ceiling <= 0 {
		return 0
	}
	return rand.N(ceiling + 1)
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP
// date. The result is within [0, maxRetryAfter].
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		return clampSeconds(secs)
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return clampSeconds(t.Sub(now).Seconds())
}

// parseRetryAfterMS reads the Retry-After-Ms header some servers send.
func parseRetryAfterMS(v string) (time.Duration, bool) {
	ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return 0, false
	}
	return clampSeconds(ms / 1000)
}

func clampSeconds(s float64) (time.Duration, bool) {
	switch {
	case math.IsNaN(s):
		return 0, false
	case s <= 0:
		return 0, true
	case s >= maxRetryAfter.Seconds():
		return maxRetryAfter, true
	}
	return time.Duration(s * float64(time.Second)), true
}
