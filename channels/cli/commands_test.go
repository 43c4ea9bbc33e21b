package cli_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/channels/cli"
)

// events is what the fakes did, in order.
type events struct {
	mu   sync.Mutex
	list []string
}

func (e *events) add(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, s)
}

func (e *events) all() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.list)
}

// sessions stands in for the daemon's sessions.
type sessions struct {
	status    string
	statusErr error
	resetErr  error
	log       *events // resets, in order with the model's answers
}

func (s *sessions) Reset(_ context.Context, session string) error {
	s.log.add("reset " + session)
	return s.resetErr
}

func (s *sessions) Status(context.Context, string) (string, error) { return s.status, s.statusErr }

// userError carries a sentence for the user, like the daemon's.
type userError struct{ msg string }

func (e userError) Error() string       { return "reset: " + e.msg }
func (e userError) UserMessage() string { return e.msg }

// ask answers line the way a mode of the chat does and returns what it
// printed.
func ask(t *testing.T, mode string, c *cli.Chat, line string) string {
	t.Helper()
	var out strings.Builder
	c.Out = &out
	switch mode {
	case "one message":
		reply, err := c.Ask(t.Context(), line)
		if err != nil {
			t.Fatalf("Ask(%q): %v", line, err)
		}
		return reply
	case "plain":
		c.Plain = true
	}
	c.In = strings.NewReader(line + "\n")
	if err := c.Run(t.Context()); err != nil {
		t.Fatalf("Run with %q: %v", line, err)
	}
	return out.String()
}

// The terminal answers its commands itself, in every mode; anything else,
// a path too, goes to the model.
func TestCommands(t *testing.T) {
	tests := []struct {
		name, line string
		want       []string
		model      bool     // the line reached the model
		resets     []string // the sessions reset
	}{
		{name: "help", line: "/help", want: []string{"/new: start a fresh conversation\n", "/stop: ", "/status: ", "exit, quit or Ctrl-D"}},
		{name: "status", line: "/status", want: []string{
			"Model: gpt-test\nSession: 3 messages in context\nUptime: ", "\nThis session: idle, 0 waiting\nAll chats: 0 running, 0 waiting"}},
		{name: "stop when idle", line: "/stop", want: []string{"Nothing to stop."}},
		{name: "new", line: "/new", want: []string{"Started a new conversation. What's next?"}, resets: []string{"reset cli:work"}},
		{name: "new in capitals, with words", line: "  /NEW please", want: []string{"Started a new conversation."}, resets: []string{"reset cli:work"}},
		{name: "unknown", line: "/jobs", want: []string{"I do not know /jobs.\n\nType a message", "/help: this list"}},
		{name: "unknown with a bot name", line: "/frob@nanobot now", want: []string{"I do not know /frob."}},
		{name: "path", line: "/etc/hosts what is this?", want: []string{"/ETC/HOSTS WHAT IS THIS?"}, model: true},
		{name: "lone slash", line: "/ hello", want: []string{"/ HELLO"}, model: true},
		{name: "text", line: "what is /new?", want: []string{"WHAT IS /NEW?"}, model: true},
	}
	for _, mode := range []string{"one message", "plain", "interactive"} {
		for _, tt := range tests {
			t.Run(mode+"/"+tt.name, func(t *testing.T) {
				r, s := &upper{}, &sessions{status: "Session: 3 messages in context", log: &events{}}
				c := &cli.Chat{Session: "work", Turns: engine(t, r), Sessions: s, Model: "gpt-test", Started: time.Now()}
				got := ask(t, mode, c, tt.line)
				for _, want := range tt.want {
					if !strings.Contains(got, want) {
						t.Errorf("%q printed %q, want it to hold %q", tt.line, got, want)
					}
				}
				if model := len(r.turns) == 1; model != tt.model || len(r.turns) > 1 {
					t.Errorf("%q made %d turns of the model, want the model asked: %v", tt.line, len(r.turns), tt.model)
				}
				if got := s.log.all(); !slices.Equal(got, tt.resets) {
					t.Errorf("%q: sessions did %q, want %q", tt.line, got, tt.resets)
				}
			})
		}
	}
}

// What /status and /new say when the sessions cannot serve them.
func TestCommandReplies(t *testing.T) {
	const queue = "This session: idle, 0 waiting\nAll chats: 0 running, 0 waiting"
	tests := []struct {
		name, line string
		sessions   cli.Sessions
		want       string
	}{
		{"status without sessions", "/status", nil, "Model: gpt-test\n" + queue},
		{"status naming its model", "/status", &sessions{status: "Model: gpt-test (the last answer came from the fallback b)\nSession: 1 messages\n"},
			"Model: gpt-test (the last answer came from the fallback b)\nSession: 1 messages\n" + queue},
		{"status failing", "/status", &sessions{statusErr: errors.New("disk gone")},
			"Model: gpt-test\nConversation: unavailable (disk gone)\n" + queue},
		{"new without sessions", "/new", nil, "Starting a new conversation is not available."},
		{"new refused", "/new", &sessions{log: &events{}, resetErr: userError{"I can't save this conversation to memory today: the budget is spent."}},
			"I can't save this conversation to memory today: the budget is spent."},
		{"new failing", "/new", &sessions{log: &events{}, resetErr: errors.New("database is locked")},
			"Sorry, I could not start a new conversation (database is locked). Please try again."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &upper{}
			c := &cli.Chat{Turns: engine(t, r), Sessions: tt.sessions, Model: "gpt-test"}
			if tt.sessions == nil {
				c.Sessions = nil // not a nil *sessions
			}
			got, err := c.Ask(t.Context(), tt.line)
			if err != nil || got != tt.want {
				t.Errorf("Ask(%q) = %q, %v, want %q", tt.line, got, err, tt.want)
			}
			if len(r.turns) != 0 {
				t.Errorf("Ask(%q) reached the model", tt.line)
			}
		})
	}
}

// held answers a message that starts with "long" once released, or ends
// it when the turn is stopped; others at once.
type held struct {
	started chan string
	release chan struct{}
	log     *events
}

func newHeld(log *events) *held {
	return &held{started: make(chan string, 1), release: make(chan struct{}), log: log}
}

func (h *held) Answer(ctx context.Context, _ agent.Turn, msg agent.Message, _ bool) (agent.Result, error) {
	if strings.HasPrefix(msg.Content, "long") {
		h.started <- msg.Content
		select {
		case <-h.release:
		case <-ctx.Done():
			h.log.add("stopped " + msg.Content)
			return agent.Result{}, context.Cause(ctx)
		}
	}
	h.log.add("answered " + msg.Content)
	return agent.Result{Text: "answered: " + msg.Content}, nil
}

// While a turn works, /stop ends it and /status shows it at once; /new
// waits for it, and what is typed after /new is the new conversation's.
func TestCommandsDuringATurn(t *testing.T) {
	tests := []struct {
		name   string
		during []string // typed while "long job" works; two empty lines follow, so each was handled
		after  []string // typed once it is released (unless stopped)
		want   []string // printed
		log    []string // what the model and the sessions did, in order
	}{
		{
			name:   "stop",
			during: []string{"/stop"},
			after:  []string{"next"},
			want:   []string{"\nStopped working on \"long job\".\n"},
			log:    []string{"stopped long job", "answered next"},
		},
		{
			name:   "status and help",
			during: []string{"/status", "/help"},
			want:   []string{"This session: working on a reply, 0 waiting\nAll chats: 1 running, 0 waiting", "/new: start a fresh conversation"},
			log:    []string{"answered long job"},
		},
		{
			name:   "new",
			during: []string{"/new", "hello again"},
			want:   []string{"\nanswered: long job\n\n\nStarted a new conversation. What's next?\n\n\nanswered: hello again\n"},
			log:    []string{"answered long job", "reset cli:default", "answered hello again"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &events{}
			h := newHeld(log)
			in, typed := io.Pipe()
			var out strings.Builder
			c := &cli.Chat{In: in, Out: &out, Turns: engine(t, h), Sessions: &sessions{log: log}}
			done := make(chan error, 1)
			go func() { done <- c.Run(t.Context()) }()

			write(t, typed, "long job\n")
			<-h.started
			for _, l := range append(tt.during, "", "") {
				write(t, typed, l+"\n")
			}
			if !slices.Contains(tt.log, "stopped long job") {
				close(h.release)
			}
			for _, l := range tt.after {
				write(t, typed, l+"\n")
			}
			typed.Close()
			if err := <-done; err != nil {
				t.Fatalf("Run: %v", err)
			}
			got := out.String()
			for _, want := range tt.want {
				if !strings.Contains(got, want) {
					t.Errorf("printed %q, want it to hold %q", got, want)
				}
			}
			if got := log.all(); !slices.Equal(got, tt.log) {
				t.Errorf("did %q, want %q", got, tt.log)
			}
		})
	}
}
