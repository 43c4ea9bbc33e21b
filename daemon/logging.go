package daemon

import (
	"context"
	"io"
	"log/slog"
	"strings"

	"github.com/nanobot-go/nanobot/config"
)

// NewLogger builds the process's logger. Every string that reaches the
// output passes the redactor, so a secret that slips into an error message
// (a URL with the bot token, say) is still not written.
func NewLogger(w io.Writer, c config.Log, level *slog.LevelVar, redact func(string) string) *slog.Logger {
	level.Set(parseLevel(c.Level))
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		switch a.Value.Kind() {
		case slog.KindString:
			a.Value = slog.StringValue(redact(a.Value.String()))
		case slog.KindAny:
			if err, ok := a.Value.Any().(error); ok {
				a.Value = slog.StringValue(redact(err.Error()))
			}
		}
		return a
	}}
	var h slog.Handler
	if c.Format == "json" {
		h = slog.NewJSONHandler(w, opts)
	} else {
		h = slog.NewTextHandler(w, opts)
	}
	return slog.New(redactMessages{h, redact})
}

func parseLevel(s string) slog.Level {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}

// redactMessages also scrubs the log message itself.
type redactMessages struct {
	slog.Handler
	redact func(string) string
}

func (h redactMessages) Handle(ctx context.Context, r slog.Record) error {
	if red := h.redact(r.Message); red != r.Message {
		nr := slog.NewRecord(r.Time, r.Level, red, r.PC)
		r.Attrs(func(a slog.Attr) bool { nr.AddAttrs(a); return true })
		r = nr
	}
	return h.Handler.Handle(ctx, r)
}

func (h redactMessages) WithAttrs(as []slog.Attr) slog.Handler {
	return redactMessages{h.Handler.WithAttrs(as), h.redact}
}

func (h redactMessages) WithGroup(name string) slog.Handler {
	return redactMessages{h.Handler.WithGroup(name), h.redact}
}
