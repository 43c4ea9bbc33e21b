package daemon

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/config"
)

func TestLoggerRedactsSecretsOfTheCurrentConfig(t *testing.T) {
	cfg := config.Default()
	cfg.Provider.APIKey = "sk-first-secret-value"
	secrets := NewRedactor(cfg)
	var out strings.Builder
	log := NewLogger(&out, config.Log{Level: "info"}, new(slog.LevelVar), secrets.Redact)

	log.Info("calling with sk-first-secret-value", "url", "https://x/?key=sk-first-secret-value")
	next := *cfg
	next.Provider.APIKey = "sk-second-secret-value"
	secrets.set(&next) // a reload
	log.With("key", "sk-second-secret-value").Error("failed", "err", errString("auth sk-second-secret-value"))

	got := out.String()
	if strings.Contains(got, "sk-first-secret-value") || strings.Contains(got, "sk-second-secret-value") {
		t.Errorf("a secret reached the log:\n%s", got)
	}
	if strings.Count(got, "REDACTED") < 4 {
		t.Errorf("want every secret replaced with REDACTED:\n%s", got)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
