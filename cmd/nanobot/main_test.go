package main

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/nanobot-go/nanobot/safety/sandbox"
)

// cliArgsEnv makes the test binary run the program with these arguments
// (JSON) instead of the tests: runCLIAs starts it so as another user.
const cliArgsEnv = "NANOBOT_TEST_CLI_ARGS"

// TestMain lets the test binary act as the sandbox helper, as the real
// binary does in main, and as the program itself.
func TestMain(m *testing.M) {
	sandbox.RunHelper()
	if raw := os.Getenv(cliArgsEnv); raw != "" {
		var args []string
		if err := json.Unmarshal([]byte(raw), &args); err != nil {
			panic(err)
		}
		err := run(context.Background(), args, os.Stdout, os.Stderr)
		os.Exit(exitCode(err, os.Stderr))
	}
	os.Exit(m.Run())
}
