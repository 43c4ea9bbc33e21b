package config_test

import (
	"fmt"
	"os"

	"github.com/nanobot-go/nanobot/config"
)

func ExampleParse() {
	data := []byte("agent:\n  max_iterations: 500\n  max_concurent: 2\n")
	_, err := config.Parse("config.yaml", data, os.LookupEnv)
	fmt.Println(err)
	// Output:
	// config.yaml:2: agent.max_iterations: must be between 1 and 200
	// config.yaml:3: agent.max_concurent: unknown key (did you mean "max_concurrent"?)
}

func ExampleSetKeys() {
	src := []byte("provider:\n  model: gpt-4o-mini   # model name\nchannels:\n  telegram:\n    enabled: false\n    allow_from: []\n")
	out, err := config.SetKeys(src, map[string]string{
		"provider.model":               "gpt-4.1",
		"channels.telegram.enabled":    "true",
		"channels.telegram.allow_from": "123456789",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(out))
	// Output:
	// provider:
	//   model: gpt-4.1       # model name
	// channels:
	//   telegram:
	//     enabled: true
	//     allow_from: [123456789]
}

func ExampleConfig_Redacted() {
	lookup := func(name string) (string, bool) { return map[string]string{"KEY": "sk-secret"}[name], true }
	data := []byte("provider:\n  api_key: ${KEY}\n  model: llama3\n  base_url: http://localhost:11434/v1\n")
	c, err := config.Parse("/etc/nanobot/config.yaml", data, lookup)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := c.Redacted()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(out))
	// Output:
	// # effective configuration from /etc/nanobot/config.yaml (secrets redacted)
	// provider:
	//   base_url: http://localhost:11434/v1
	//   api_key: REDACTED
	//   model: llama3
	//   timeout: 2m
	//   max_retries: 3
	//   max_tokens: 4096
	//   temperature: null
	//   vision: false
	//   transcription_model: ""
	//   fallbacks: []
	//   fallback_cooldown: 5m
	// agent:
	//   max_iterations: 20
	//   reflection_prompt: Reflect on the results and decide next steps.
	//   system_prompt: ""
	//   workspace: /etc/nanobot/workspace
	//   max_concurrent: 4
	//   shutdown_timeout: 30s
	//   turn_timeout: 10m
	//   context_tokens: 32000
	//   daily_token_budget: 0
	//   prompt_file_max_chars: 4000
	//   timezone: ""
	//   subagents:
	//     max_iterations: 15
	//     max_per_chat: 3
	//     timeout: 30m
	//   steering: on
	// storage:
	//   path: /etc/nanobot/data/nanobot.db
	//   backup:
	//     dir: ""
	//     every: 24h
	//     keep: 7
	//   allow_empty_start: false
	// memory:
	//   scope: global
	//   window: 50
	//   max_chars: 8000
	// tools:
	//   restrict_to_workspace: true
	//   exec:
	//     enabled: true
	//     timeout: 1m
	//     max_output: 10000
	//     deny: []
	//     allow: []
	//     approval: deny
	//     approver: ""
	//     approval_timeout: 5m
	//     categories: {}
	//     sandbox: auto
	//     sandbox_paths:
	//       read: []
	//       write: []
	//     limits:
	//       memory: 1GiB
	//       processes: 256
	//       file_size: 1GiB
	//       cpu_time: 0s
	//       disk_written: 2GiB
	//     network: any
	//     env: []
	//   web:
	//     enabled: true
	//     allow_private: false
	//     timeout: 30s
	//     max_bytes: 1000000
	//     search:
	//       provider: ""
	//       api_key: ""
	//       url: ""
	//       timeout: 15s
	//   mcp_servers: {}
	// channels:
	//   telegram:
	//     enabled: true
	//     token: ""
	//     api_url: https://api.telegram.org
	//     allow_from: []
	//     group_policy: mention
	//     reply_to_message: false
	//     mode: polling
	//     webhook:
	//       url: ""
	//       listen: 127.0.0.1:8443
	//       secret_token: ""
	//     max_file_size: 20971520
	//     progress: status
	// gateway:
	//   listen: 127.0.0.1:18790
	// api:
	//   listen: ""
	//   keys: []
	// web:
	//   listen: 127.0.0.1:18791
	//   public_url: ""
	// log:
	//   level: info
	//   format: text
	// cron:
	//   enabled: true
	//   max_jobs_per_chat: 50
	//   missed: once
	// heartbeat:
	//   interval: 30m
	//   file: HEARTBEAT.md
	//   chat: ""
	//   quiet_hours: ""
}
