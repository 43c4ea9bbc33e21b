package telegramtest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// The outages a test can stage: failed and dropped calls, a stalled network path, a revoked token.

// FailNext makes the next n calls of method fail with status and
// description (a standard one when empty). retryAfter is sent as
// parameters.retry_after, which is how Telegram reports 429s.
func (s *Server) FailNext(method string, n int, status int, retryAfter int, description string) {
	if description == "" {
		description = defaultDescription(status, retryAfter)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := strings.ToLower(method)
	for range n {
		s.fails[key] = append(s.fails[key], failure{status: status, retryAfter: retryAfter, desc: description})
	}
}

// DropNext makes the next n calls of method end with the connection closed
// and no answer at all, as when a proxy or the network drops a long poll.
func (s *Server) DropNext(method string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := strings.ToLower(method)
	for range n {
		s.fails[key] = append(s.fails[key], failure{drop: true})
	}
}

func defaultDescription(status, retryAfter int) string {
	switch status {
	case http.StatusTooManyRequests:
		return fmt.Sprintf("Too Many Requests: retry after %d", retryAfter)
	case http.StatusBadRequest:
		return "Bad Request"
	case http.StatusUnauthorized:
		return "Unauthorized"
	case http.StatusForbidden:
		return "Forbidden: bot was blocked by the user"
	case http.StatusConflict:
		return "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"
	}
	return http.StatusText(status)
}

// Stall makes the server accept every request from now on and never answer
// it, like a network path that went dead: the client sees its connection
// open and its request sent, then silence. Requests that arrive during a
// stall stay unanswered even after Resume, until the client gives up on
// them; only later requests are served again.
func (s *Server) Stall() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stalled = true
	s.notify()
}

// Resume ends a stall for requests that arrive from now on.
func (s *Server) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stalled = false
	s.notify()
}

// Held is the number of requests a stall holds right now: received and
// unanswered, their clients still waiting.
func (s *Server) Held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

// WaitHeld waits until a stall holds at least n requests, or returns ctx's
// error.
func (s *Server) WaitHeld(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		held, changed := s.held, s.changed
		s.mu.Unlock()
		if held >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("wait for %d held requests, have %d: %w", n, held, ctx.Err())
		}
	}
}

// WaitReleased waits until a stall holds no request (their clients gave
// up, which the server learns a moment after they do), or returns ctx's
// error.
func (s *Server) WaitReleased(ctx context.Context) error {
	for {
		s.mu.Lock()
		held, changed := s.held, s.changed
		s.mu.Unlock()
		if held == 0 {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("wait for the held requests to be released, have %d: %w", held, ctx.Err())
		}
	}
}

// hold keeps a request that arrived during a stall until its client gives
// up or the server shuts down; it reports whether it held the request.
func (s *Server) hold(ctx context.Context) bool {
	s.mu.Lock()
	if !s.stalled {
		s.mu.Unlock()
		return false
	}
	s.held++
	s.notify()
	s.mu.Unlock()
	select {
	case <-ctx.Done():
	case <-s.done:
	}
	s.mu.Lock()
	s.held--
	s.notify()
	s.mu.Unlock()
	return true
}

// RevokeToken makes every later call fail with 401 Unauthorized, as
// Telegram answers once the owner revoked the token with @BotFather.
func (s *Server) RevokeToken() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revoked = true
	s.notify()
}

func (s *Server) isRevoked() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.revoked
}

func (s *Server) takeFailure(method string) (failure, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := strings.ToLower(method)
	q := s.fails[key]
	if len(q) == 0 {
		return failure{}, false
	}
	s.fails[key] = q[1:]
	return q[0], true
}
