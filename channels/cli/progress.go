package cli

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/internal/human"
	"github.com/nanobot-go/nanobot/turns"
)

const argLimit = 60

// Progress prints a line for each tool call of the turn as it returns, so
// a long turn shows what it does; in plain mode it prints nothing.
func (s source) Progress(context.Context, []*turns.Job) (func(agent.ProgressEvent), func()) {
	if s.progress == nil {
		return func(agent.ProgressEvent) {}, func() {}
	}
	return func(ev agent.ProgressEvent) {
		if ev.Kind != agent.ProgressToolDone {
			return
		}
		fmt.Fprintln(s.progress, toolLine(ev, s.dim))
	}, func() {}
}

// toolLine is the line of a finished call: "  · web_fetch example.com (0.3s)".
func toolLine(ev agent.ProgressEvent, dim bool) string {
	line := "  · " + printable(ev.Tool)
	if arg := printable(human.Args(ev.Args, argLimit)); arg != "" {
		line += " " + arg
	}
	took := human.Duration(ev.Duration)
	if ev.Failed {
		took += ", failed"
	}
	line += " (" + took + ")"
	if dim {
		return "\x1b[2m" + line + "\x1b[0m"
	}
	return line
}

// printable drops what a terminal would act on rather than show: the
// model wrote the arguments, and an escape sequence in them must not
// reach the screen.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, s)
}
