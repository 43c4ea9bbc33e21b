package cli

import (
	"bufio"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/agent"
)

// lines is standard input read line by line in the background, so that
// typing goes on while a turn works.
type lines struct {
	lines chan string // closed at end of input; err is set before
	err   error
}

// readLines reads r until its end or until stop is closed.
func readLines(r io.Reader, stop <-chan struct{}) *lines {
	in := &lines{lines: make(chan string)}
	go func() {
		defer close(in.lines)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			select {
			case in.lines <- sc.Text():
			case <-stop:
				return
			}
		}
		in.err = sc.Err()
	}()
	return in
}

// typing holds what was typed while a turn worked: the turn takes it at
// its next model call; what is left is the next message.
type typing struct {
	mu    sync.Mutex
	texts []string
	at    time.Time // when the first of texts was typed
	quit  bool      // the chat ends once the turn is done
}

func (t *typing) add(text string, quit bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.quit = t.quit || quit
	if text != "" && !t.quit {
		if len(t.texts) == 0 {
			t.at = time.Now()
		}
		t.texts = append(t.texts, text)
	}
}

// take hands the running turn what was typed, as one message.
func (t *typing) take() []agent.Steer {
	text, at := t.drain()
	if text == "" {
		return nil
	}
	return []agent.Steer{{Message: agent.Message{Role: agent.RoleUser, Content: text, CreatedAt: at}}}
}

// next is what was typed during the last turn and not read by it, as the
// next message, and whether the chat ends.
func (t *typing) next() (text string, quit bool) {
	text, _ = t.drain()
	t.mu.Lock()
	defer t.mu.Unlock()
	return text, t.quit && text == ""
}

func (t *typing) drain() (string, time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	text, at := strings.Join(t.texts, "\n"), t.at
	t.texts = nil
	return text, at
}
