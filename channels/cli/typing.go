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

// typing holds what was typed while a turn worked, in order: the turn
// takes the lines before the first /new among them at its next model
// call; what is left are the next messages, and a /new among them is a
// turn of its own, so the lines after it belong to the new conversation.
type typing struct {
	mu    sync.Mutex
	lines []typedLine
	quit  bool // the chat ends once the lines are answered
}

type typedLine struct {
	text string
	at   time.Time
}

func (t *typing) add(text string, quit bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.quit = t.quit || quit
	if text != "" && !t.quit {
		t.lines = append(t.lines, typedLine{text, time.Now()})
	}
}

// take hands the running turn what was typed, as one message.
func (t *typing) take() []agent.Steer {
	t.mu.Lock()
	defer t.mu.Unlock()
	text, at := t.textsLocked()
	if text == "" {
		return nil
	}
	return []agent.Steer{{Message: agent.Message{Role: agent.RoleUser, Content: text, CreatedAt: at}}}
}

// next is the next message of what was typed during the last turn and not
// read by it (a /new alone), and whether the chat ends.
func (t *typing) next() (text string, quit bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) > 0 && isReset(t.lines[0].text) {
		text, t.lines = t.lines[0].text, t.lines[1:]
		return text, false
	}
	text, _ = t.textsLocked()
	return text, t.quit && text == ""
}

// textsLocked removes the lines before the first /new and returns them
// joined, with when the first was typed. mu must be held.
func (t *typing) textsLocked() (string, time.Time) {
	n := 0
	for n < len(t.lines) && !isReset(t.lines[n].text) {
		n++
	}
	if n == 0 {
		return "", time.Time{}
	}
	texts := make([]string, n)
	for i, l := range t.lines[:n] {
		texts[i] = l.text
	}
	at := t.lines[0].at
	t.lines = t.lines[n:]
	return strings.Join(texts, "\n"), at
}
