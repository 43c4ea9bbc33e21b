// Package openai is the model Provider for any OpenAI-compatible chat
// completion API (OpenAI, OpenRouter, DeepSeek, vLLM, Ollama, ...), built on
// github.com/sashabaranov/go-openai. It adds what an unattended daemon needs:
// per-attempt timeouts, retries with backoff that honour Retry-After, and
// errors a user can read that never carry the API key.
package openai

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/nanobot-go/nanobot/agent"
)

// Config configures a Provider.
type Config struct {
	BaseURL string // e.g. https://api.openai.com/v1
	APIKey  string
	Model   string
	// Timeout bounds each attempt; 0 means only the caller's context does.
	Timeout time.Duration
	// MaxRetries is how many extra attempts follow a retryable failure.
	MaxRetries int
	MaxTokens  int
	// Temperature is sent when set; nil leaves it to the model.
	Temperature *float32
	// Vision sends the images of user messages to the model.
	Vision bool
	// TranscriptionModel enables Transcribe (e.g. "whisper-1").
	TranscriptionModel string
	Logger             *slog.Logger
}

// Default backoff: full jitter over an exponential ceiling.
const (
	defaultBackoffBase = 500 * time.Millisecond
	defaultBackoffMax  = 30 * time.Second
	// maxRetryAfter caps how long a server may ask us to wait.
	maxRetryAfter = 60 * time.Second
)

// Provider sends chat completions and transcriptions to an OpenAI-compatible
// API. It is safe for concurrent use.
type Provider struct {
	cfg     Config
	client  *goopenai.Client
	log     *slog.Logger
	red     redactor
	dialect dialect
	// plain is set once the endpoint refused the fields the wire layer
	// adds (a strict schema): from then on none are sent.
	plain atomic.Bool
	// noTemperature is set once the model refused the configured
	// temperature (some take only their own): from then on none is sent.
	noTemperature atomic.Bool

	backoffBase, backoffMax time.Duration
	// sleep waits between attempts; tests replace it to observe delays.
	sleep func(ctx context.Context, d time.Duration) error
}

var _ agent.Provider = (*Provider)(nil)

// Option adjusts a Provider.
type Option func(*Provider)

// WithBackoff sets the base and the cap of the exponential backoff between
// attempts (defaults 500 ms and 30 s). A Retry-After header overrides it.
func WithBackoff(base, max time.Duration) Option {
	return func(p *Provider) { p.backoffBase, p.backoffMax = base, max }
}

// New returns a Provider for cfg.
func New(cfg Config, opts ...Option) *Provider {
	p := &Provider{
		cfg:         cfg,
		log:         cfg.Logger,
		red:         redactor{secret: cfg.APIKey},
		backoffBase: defaultBackoffBase,
		backoffMax:  defaultBackoffMax,
		sleep:       sleepCtx,
		dialect:     dialectOf(cfg.BaseURL, cfg.Model),
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	for _, o := range opts {
		o(p)
	}
	cc := goopenai.DefaultConfig(cfg.APIKey)
	if cfg.BaseURL != "" {
		cc.BaseURL = cfg.BaseURL
	}
	cc.HTTPClient = &http.Client{Transport: wireTransport{base: http.DefaultTransport}}
	p.client = goopenai.NewClientWithConfig(cc)
	return p
}

// Complete sends one non-streaming chat completion, retrying transient
// failures. Its errors are *Error.
func (p *Provider) Complete(ctx context.Context, req agent.Request) (agent.Response, error) {
	session := ""
	if t, ok := agent.TurnFrom(ctx); ok {
		session = t.Session
	}
	plain := p.plain.Load()
	wire, patch := p.chatRequest(session, req, plain)
	resp, err := p.send(ctx, wire, patch)
	if err != nil && !plain && !patch.empty() && refusedAdditions(err) {
		// A strict endpoint (Groq, Mistral) refuses fields it does not
		// know, such as the reasoning another model left in the history.
		p.plain.Store(true)
		p.log.Warn("the model endpoint refused provider fields; sending plain requests from now on",
			"endpoint", EndpointName(p.cfg.BaseURL, p.cfg.Model), "error", err.Error())
		wire, patch = p.chatRequest(session, req, true)
		resp, err = p.send(ctx, wire, patch)
	}
	if err != nil && p.sendsTemperature() && refusedTemperature(err) {
		// Kimi K2.5 and later, OpenAI's reasoning models: only their own
		// temperature is accepted, and a setting that fits another model
		// must not leave every message failing.
		p.noTemperature.Store(true)
		p.log.Warn("the model refused provider.temperature; sending none from now on (remove the setting)",
			"endpoint", EndpointName(p.cfg.BaseURL, p.cfg.Model), "temperature", *p.cfg.Temperature, "error", err.Error())
		wire.Temperature = 0
		resp, err = p.send(ctx, wire, patch)
	}
	if err != nil {
		return agent.Response{}, err
	}
	resp.Model = p.cfg.Model
	return resp, nil
}

// sendsTemperature says whether requests carry the configured temperature.
func (p *Provider) sendsTemperature() bool {
	return p.cfg.Temperature != nil && !p.noTemperature.Load()
}

func (p *Provider) send(ctx context.Context, wire goopenai.ChatCompletionRequest, patch *bodyPatch) (agent.Response, error) {
	if !patch.empty() {
		ctx = context.WithValue(ctx, patchKey{}, patch)
	}
	var resp agent.Response
	err := p.retry(ctx, "chat", func(ctx context.Context) error {
		r, err := p.client.CreateChatCompletion(ctx, wire)
		if err != nil {
			return err
		}
		var raw []byte
		if info, ok := ctx.Value(attemptKey{}).(*attemptInfo); ok {
			raw = info.reply
		}
		resp, err = response(r, raw)
		return err
	})
	return resp, err
}

// Model is the model this provider asks.
func (p *Provider) Model() string { return p.cfg.Model }

// Transcribe turns speech into text through the API's /audio/transcriptions
// endpoint with the configured transcription model. filename's extension
// tells the server the audio format.
func (p *Provider) Transcribe(ctx context.Context, filename string, audio []byte) (string, error) {
	if p.cfg.TranscriptionModel == "" {
		return "", &Error{Message: "voice transcription is not configured (provider.transcription_model is empty)"}
	}
	var text string
	err := p.retry(ctx, "transcription", func(ctx context.Context) error {
		r, err := p.client.CreateTranscription(ctx, goopenai.AudioRequest{
			Model:    p.cfg.TranscriptionModel,
			FilePath: filename,
			Reader:   bytes.NewReader(audio),
		})
		text = r.Text
		return err
	})
	return text, err
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
