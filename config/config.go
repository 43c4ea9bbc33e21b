// Package config reads nanobot's config.yaml: defaults, ${VAR} expansion from the environment, a strict
// decode whose errors name the file, the line and the dotted key, and validation.
//
// Only cmd/nanobot imports this package; everything else receives plain values from it.
package config

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// Config is the effective configuration. Load fills it from config.yaml on top of Default().
//
// Relative paths in the file (agent.workspace, storage.path) are resolved against the directory of the
// file, so after Load they are absolute. Compare two configs with Diff or Changed, or in tests with
// cmpopts.IgnoreUnexported(config.Config{}): a loaded Config remembers where each key was written.
type Config struct {
	// Path is the absolute path of the file the config was loaded from; empty for Default().
	Path string `yaml:"-"`

	Provider   Provider   `yaml:"provider"`
	Agent      Agent      `yaml:"agent"`
	Storage    Storage    `yaml:"storage"`
	Memory     Memory     `yaml:"memory"`
	Tools      Tools      `yaml:"tools"`
	Channels   Channels   `yaml:"channels"`
	Gateway    Gateway    `yaml:"gateway"`
	API        API        `yaml:"api"`
	WebConsole WebConsole `yaml:"web"`
	Log        Log        `yaml:"log"`
	Cron       Cron       `yaml:"cron"`
	Heartbeat  Heartbeat  `yaml:"heartbeat"`

	src *source // where each key was written; nil for Default()
}

// Provider is the OpenAI-compatible model endpoint.
type Provider struct {
	BaseURL            string        `yaml:"base_url"`
	APIKey             Secret        `yaml:"api_key"`
	Model              string        `yaml:"model"`
	Timeout            time.Duration `yaml:"timeout"`     // per request
	MaxRetries         int           `yaml:"max_retries"` // on 429, 5xx and network errors
	MaxTokens          int           `yaml:"max_tokens"`  // 0 leaves it to the endpoint
	Temperature        *float64      `yaml:"temperature"` // 0..2; nil: the model's own default
	Vision             bool          `yaml:"vision"`
	TranscriptionModel string        `yaml:"transcription_model"` // empty: voice notes are not transcribed
	// Fallbacks are tried in order when the endpoint above still fails after its retries (unreachable,
	// timeouts, 429, 5xx); a failed endpoint is skipped for FallbackCooldown.
	Fallbacks        []Endpoint    `yaml:"fallbacks"`
	FallbackCooldown time.Duration `yaml:"fallback_cooldown"`
}

// Endpoint is another OpenAI-compatible endpoint and model to ask.
type Endpoint struct {
	BaseURL string `yaml:"base_url"`
	APIKey  Secret `yaml:"api_key"`
	Model   string `yaml:"model"`
}

// Agent configures the reasoning loop and the turns it runs.
type Agent struct {
	MaxIterations    int           `yaml:"max_iterations"`    // 1..200
	ReflectionPrompt string        `yaml:"reflection_prompt"` // empty disables it
	SystemPrompt     string        `yaml:"system_prompt"`     // appended to the built-in prompt
	Workspace        string        `yaml:"workspace"`         // absolute after Load
	MaxConcurrent    int           `yaml:"max_concurrent"`    // chats answered in parallel, 1..64
	ShutdownTimeout  time.Duration `yaml:"shutdown_timeout"`
	TurnTimeout      time.Duration `yaml:"turn_timeout"`
	ContextTokens    int           `yaml:"context_tokens"`     // >= 2000
	DailyTokenBudget int           `yaml:"daily_token_budget"` // per chat and day; 0 = unlimited
	// PromptFileMaxChars caps each of the workspace's prompt files (AGENTS.md, SOUL.md, USER.md,
	// TOOLS.md, IDENTITY.md) in the system prompt.
	PromptFileMaxChars int       `yaml:"prompt_file_max_chars"`
	Timezone           string    `yaml:"timezone"` // IANA zone of schedules and shown times; empty = the host's
	Subagents          Subagents `yaml:"subagents"`
	// Steering: SteeringOn hands a text sent while its sender's turn runs
	// to that turn at its next model call; SteeringOff queues it.
	Steering string `yaml:"steering"`
}

// Values of agent.steering.
const (
	SteeringOn  = "on"
	SteeringOff = "off"
)

// Subagents limits the background tasks the spawn tool starts.
type Subagents struct {
	MaxIterations int           `yaml:"max_iterations"` // 1..200
	MaxPerChat    int           `yaml:"max_per_chat"`   // running at once per chat
	Timeout       time.Duration `yaml:"timeout"`
}

// Storage locates the SQLite database.
type Storage struct {
	Path   string `yaml:"path"` // absolute after Load
	Backup Backup `yaml:"backup"`
	// AllowEmptyStart lets the gateway start on a new, empty database
	// although Litestream has replicated one at Path (a restore pending).
	AllowEmptyStart bool `yaml:"allow_empty_start"`
}

// Backup configures the gateway's periodic database backups.
type Backup struct {
	Dir   string        `yaml:"dir"`   // empty = off; absolute after Load
	Every time.Duration `yaml:"every"` // at least 1m
	Keep  int           `yaml:"keep"`  // copies kept, the newest; 1..1000
}

// Memory configures long-term memory and consolidation.
type Memory struct {
	Scope    string `yaml:"scope"`     // ScopeGlobal or ScopeChat
	Window   int    `yaml:"window"`    // unconsolidated messages per session, >= 4
	MaxChars int    `yaml:"max_chars"` // MEMORY size past which consolidation condenses it
}

// Memory scopes.
const (
	ScopeGlobal = "global"
	ScopeChat   = "chat"
)

// Tools configures the tools the model may call.
type Tools struct {
	RestrictToWorkspace bool `yaml:"restrict_to_workspace"`
	Exec                Exec `yaml:"exec"`
	Web                 Web  `yaml:"web"`
	// MCPServers maps a server's name to how it is reached; its tools are offered as mcp_<name>_<tool>.
	MCPServers map[string]MCPServer `yaml:"mcp_servers"`
}

// Exec configures the shell tool and its safety policy.
type Exec struct {
	Enabled   bool          `yaml:"enabled"`
	Timeout   time.Duration `yaml:"timeout"`
	MaxOutput int           `yaml:"max_output"` // characters kept (head and tail)
	// Deny and Allow hold rules matched against each parsed simple command:
	// an argv prefix ("git push") or a regular expression after "re:"; how they
	// read a command is safety.PolicyConfig's to say.
	Deny            []string          `yaml:"deny"`
	Allow           []string          `yaml:"allow"`
	Approval        string            `yaml:"approval"` // ApprovalDeny, ApprovalOwner or ApprovalAllow
	Approver        string            `yaml:"approver"` // numeric Telegram user id; see Config.Owner
	ApprovalTimeout time.Duration     `yaml:"approval_timeout"`
	Categories      map[string]string `yaml:"categories"` // safety category → "allow" | "ask" | "deny"
	Sandbox         string            `yaml:"sandbox"`    // SandboxAuto, SandboxLandlock or SandboxOff
	SandboxPaths    SandboxPaths      `yaml:"sandbox_paths"`
	Limits          Limits            `yaml:"limits"`
	Network         string            `yaml:"network"` // NetworkAny, NetworkWeb or NetworkNone
	// Env names the variables of the daemon's environment commands get besides PATH, HOME, the
	// locale and the few others safety.BaseEnv lists; "NAME=value" sets one to a fixed value.
	// A variable holding a configured secret is never passed.
	Env []string `yaml:"env"`
}

// Values of Exec.Sandbox.
const (
	SandboxAuto     = "auto"
	SandboxLandlock = "landlock"
	SandboxOff      = "off"
)

// Values of Exec.Network.
const (
	NetworkAny  = "any"
	NetworkWeb  = "web"
	NetworkNone = "none"
)

// SandboxPaths are paths the owner adds to what sandboxed commands reach;
// absolute after Load.
type SandboxPaths struct {
	Read  []string `yaml:"read"`
	Write []string `yaml:"write"`
}

// Limits are the resource limits of a shell command; zero is unlimited.
type Limits struct {
	Memory      Size          `yaml:"memory"`       // the command's processes together, and the data of each
	Processes   int           `yaml:"processes"`    // processes of the command at once (and threads of the user)
	FileSize    Size          `yaml:"file_size"`    // per file written
	CPUTime     time.Duration `yaml:"cpu_time"`     // per process
	DiskWritten Size          `yaml:"disk_written"` // bytes the command writes to files in all
}

// What an "ask" verdict of the command filter turns into.
const (
	ApprovalDeny  = "deny"
	ApprovalOwner = "owner"
	ApprovalAllow = "allow"
)

// Web configures the web tools.
type Web struct {
	Enabled      bool          `yaml:"enabled"`
	AllowPrivate bool          `yaml:"allow_private"` // loopback, private, link-local and metadata addresses
	Timeout      time.Duration `yaml:"timeout"`
	MaxBytes     int           `yaml:"max_bytes"`
	Search       WebSearch     `yaml:"search"`
}

// WebSearch configures the web_search tool's backend.
type WebSearch struct {
	Provider string        `yaml:"provider"` // "" (no search tool), SearchBrave, SearchSearXNG or SearchTavily
	APIKey   Secret        `yaml:"api_key"`  // brave and tavily
	URL      string        `yaml:"url"`      // the SearXNG instance; for brave and tavily, another endpoint of their API
	Timeout  time.Duration `yaml:"timeout"`  // per search
}

// Web search backends.
const (
	SearchBrave   = "brave"
	SearchSearXNG = "searxng"
	SearchTavily  = "tavily"
)

// MCPServer is one Model Context Protocol server: a command spoken to over stdio, or a streamable HTTP
// endpoint. Keys left out of a server's entry take the defaults of defaults().
type MCPServer struct {
	Command  string            `yaml:"command"` // stdio: the program to run
	Args     []string          `yaml:"args"`
	Env      map[string]string `yaml:"env"`     // added to the scrubbed environment the command gets
	URL      string            `yaml:"url"`     // streamable HTTP endpoint
	Headers  map[string]Secret `yaml:"headers"` // sent with every HTTP request (e.g. Authorization)
	Timeout  time.Duration     `yaml:"timeout"` // per tool call
	Enabled  bool              `yaml:"enabled"`
	Tools    []string          `yaml:"tools"`    // the tool names to offer; empty = all
	Approval string            `yaml:"approval"` // ApprovalDeny, ApprovalOwner or ApprovalAllow
}

// defaults fills a server entry before the file's keys are decoded into it.
func (s *MCPServer) defaults() {
	s.Enabled = true
	s.Timeout = 30 * time.Second
	s.Approval = ApprovalAllow
}

// Channels groups the chat channels.
type Channels struct {
	Telegram Telegram `yaml:"telegram"`
}

// Telegram configures the Telegram bot.
type Telegram struct {
	Enabled bool   `yaml:"enabled"`
	Token   Secret `yaml:"token"`
	APIURL  string `yaml:"api_url"`
	// AllowFrom holds numeric user ids ("123456"), lower-cased usernames with their "@" ("@alice")
	// and "*" for everybody. Numbers and bare usernames in the file are normalized to these forms.
	AllowFrom      []string `yaml:"allow_from"`
	GroupPolicy    string   `yaml:"group_policy"` // GroupMention, GroupAll or GroupIgnore
	ReplyToMessage bool     `yaml:"reply_to_message"`
	Mode           string   `yaml:"mode"` // ModePolling or ModeWebhook
	Webhook        Webhook  `yaml:"webhook"`
	MaxFileSize    int64    `yaml:"max_file_size"` // bytes
	// Progress is what a chat sees while a turn runs tools: ProgressStatus
	// shows one status message that is deleted when the turn ends,
	// ProgressVerbose keeps it with the list of calls, ProgressOff shows
	// "typing…" only.
	Progress string `yaml:"progress"`
}

// Values of channels.telegram.progress.
const (
	ProgressOff     = "off"
	ProgressStatus  = "status"
	ProgressVerbose = "verbose"
)

// Group policies.
const (
	GroupMention = "mention"
	GroupAll     = "all"
	GroupIgnore  = "ignore"
)

// Telegram update delivery modes.
const (
	ModePolling = "polling"
	ModeWebhook = "webhook"
)

// Webhook configures Telegram's webhook mode.
type Webhook struct {
	URL         string `yaml:"url"`    // public HTTPS URL Telegram posts to
	Listen      string `yaml:"listen"` // local host:port
	SecretToken Secret `yaml:"secret_token"`
}

// Gateway configures the admin endpoint (/healthz, /readyz, /metrics).
type Gateway struct {
	Listen string `yaml:"listen"` // host:port; empty = off
}

// Log configures logging.
type Log struct {
	Level  string `yaml:"level"`  // debug | info | warn | error
	Format string `yaml:"format"` // text | json
}

// Cron configures scheduled jobs (the cron tool, `nanobot cron`, /jobs).
type Cron struct {
	Enabled        bool   `yaml:"enabled"`
	MaxJobsPerChat int    `yaml:"max_jobs_per_chat"`
	Missed         string `yaml:"missed"` // MissedOnce or MissedSkip
}

// Heartbeat configures the periodic look at the workspace's checklist.
type Heartbeat struct {
	Interval   time.Duration `yaml:"interval"`    // 0 = off; at least 10s
	File       string        `yaml:"file"`        // relative to agent.workspace
	Chat       string        `yaml:"chat"`        // numeric chat id; empty = first numeric allow_from
	QuietHours string        `yaml:"quiet_hours"` // "22:00-07:00" in agent.timezone; empty = none
}

// What happens to job runs missed while the daemon was down.
const (
	MissedOnce = "once" // each missed job fires once at start
	MissedSkip = "skip" // missed runs are skipped
)

// Default returns the configuration that the example config.yaml yields with an empty environment.
// Paths are as written there, relative; Load makes them absolute.
func Default() *Config {
	return &Config{
		Provider: Provider{
			BaseURL:    "https://api.openai.com/v1",
			Model:      "gpt-4o-mini",
			Timeout:    120 * time.Second,
			MaxRetries: 3,
			MaxTokens:  4096,

			Fallbacks:        []Endpoint{},
			FallbackCooldown: 5 * time.Minute,
		},
		Agent: Agent{
			MaxIterations:    20,
			ReflectionPrompt: "Reflect on the results and decide next steps.",
			Steering:         SteeringOn,
			Workspace:        "./workspace",
			MaxConcurrent:    4,
			ShutdownTimeout:  30 * time.Second,
			TurnTimeout:      10 * time.Minute,
			ContextTokens:    32000,

			PromptFileMaxChars: 4000,
			Subagents:          Subagents{MaxIterations: 15, MaxPerChat: 3, Timeout: 30 * time.Minute},
		},
		Storage: Storage{Path: "./data/nanobot.db", Backup: Backup{Every: 24 * time.Hour, Keep: 7}},
		Memory:  Memory{Scope: ScopeGlobal, Window: 50, MaxChars: 8000},
		Tools: Tools{
			RestrictToWorkspace: true,
			Exec: Exec{
				Enabled:         true,
				Timeout:         60 * time.Second,
				MaxOutput:       10000,
				Deny:            []string{},
				Allow:           []string{},
				Approval:        ApprovalDeny,
				ApprovalTimeout: 5 * time.Minute,
				Categories:      map[string]string{},
				Sandbox:         SandboxAuto,
				SandboxPaths:    SandboxPaths{Read: []string{}, Write: []string{}},
				Limits:          Limits{Memory: "1GiB", Processes: 256, FileSize: "1GiB", DiskWritten: "2GiB"},
				Network:         NetworkAny,
				Env:             []string{},
			},
			Web:        Web{Enabled: true, Timeout: 30 * time.Second, MaxBytes: 1000000, Search: WebSearch{Timeout: 15 * time.Second}},
			MCPServers: map[string]MCPServer{},
		},
		Channels: Channels{Telegram: Telegram{
			Enabled:     true,
			APIURL:      "https://api.telegram.org",
			AllowFrom:   []string{},
			GroupPolicy: GroupMention,
			Mode:        ModePolling,
			Webhook:     Webhook{Listen: "127.0.0.1:8443"},
			MaxFileSize: 20 << 20,
			Progress:    ProgressStatus,
		}},
		Gateway:    Gateway{Listen: "127.0.0.1:18790"},
		API:        API{Keys: []APIKey{}},
		WebConsole: WebConsole{Listen: "127.0.0.1:18791"},
		Log:        Log{Level: "info", Format: "text"},
		Cron:       Cron{Enabled: true, MaxJobsPerChat: 50, Missed: MissedOnce},
		Heartbeat:  Heartbeat{Interval: 30 * time.Minute, File: "HEARTBEAT.md"},
	}
}

// Size is an amount of bytes written with a unit: 512MiB, 1GiB, 10GB; a
// plain number is bytes and 0 is unlimited.
type Size string

// Bytes parses the size.
func (s Size) Bytes() (int64, error) {
	v := strings.TrimSpace(string(s))
	if v == "" {
		return 0, nil
	}
	i := 0
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(v[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: want a number with a unit, like 512MiB or 1GiB", v)
	}
	units := map[string]int64{"": 1, "B": 1, "K": 1 << 10, "KB": 1000, "KiB": 1 << 10, "M": 1 << 20, "MB": 1000 * 1000,
		"MiB": 1 << 20, "G": 1 << 30, "GB": 1000 * 1000 * 1000, "GiB": 1 << 30, "T": 1 << 40, "TB": 1000 * 1000 * 1000 * 1000, "TiB": 1 << 40}
	u, ok := units[strings.TrimSpace(v[i:])]
	if !ok || n > (1<<62)/u {
		return 0, fmt.Errorf("size %q: want a number with a unit, like 512MiB or 1GiB", v)
	}
	return n * u, nil
}

// Secret is a credential from the config. It prints and logs as REDACTED so that it cannot leak through
// fmt or slog by accident; convert it with string(s) at the one place that really sends it.
type Secret string

const redacted = "REDACTED"

// String returns REDACTED, or "" for an empty secret (so that "not set" stays visible).
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString keeps %#v from printing the value.
func (s Secret) GoString() string { return fmt.Sprintf("config.Secret(%q)", s.String()) }

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText keeps encoders (JSON, YAML) from writing the value.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Error is one problem in a config file. Its text reads "config.yaml:14: agent.max_iterations: must be
// between 1 and 200"; Line is 0 when the problem is not tied to a line (a key left at its default).
type Error struct {
	File    string // the path as given to Load
	Line    int
	Key     string // dotted key, e.g. "channels.telegram.token"; empty for malformed YAML
	Problem string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Key != "" {
		b.WriteString(": ")
		b.WriteString(e.Key)
	}
	b.WriteString(": ")
	// One problem per line, always: a joined error is read (and parsed) line by line.
	b.WriteString(strings.ReplaceAll(e.Problem, "\n", " "))
	return b.String()
}
