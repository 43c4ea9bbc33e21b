package main

import (
	"os"
	"testing"

	"github.com/nanobot-go/nanobot/safety/sandbox"
)

// TestMain lets the test binary act as the sandbox helper, as the real
// binary does in main.
func TestMain(m *testing.M) {
	sandbox.RunHelper()
	os.Exit(m.Run())
}
