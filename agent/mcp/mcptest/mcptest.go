// Package mcptest provides an MCP server for tests, built with the
// official Go SDK: over stdio as a child process (the test binary run
// again), or over streamable HTTP with httptest.
package mcptest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeEnv, set to "1", makes Serve run the server on stdio.
const ServeEnv = "NANOBOT_MCPTEST_SERVE"

// ExtraEnv sets how many extra tools (tool_0, tool_1, ...) the child
// server offers; StartDelayEnv holds its start back (a duration).
const (
	ExtraEnv      = "NANOBOT_MCPTEST_EXTRA"
	StartDelayEnv = "NANOBOT_MCPTEST_START_DELAY"
)

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

type noIn struct{}

type extraIn struct {
	Query string `json:"query" jsonschema:"what to look up"`
	Limit int    `json:"limit,omitempty" jsonschema:"how many results"`
}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// NewServer returns a server with the tools echo {text}, add {a, b},
// hang {} (answers only when the call is cancelled), pid {} (the server's
// process id), picture {} (text and an image), fail {} (a tool error), env
// {name} (a variable of the server's environment), and extra tools
// tool_0 ... tool_<extra-1>.
func NewServer(extra int) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "nanobot-test", Version: "1.0.0"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo the text back."}, func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
		return text("echo: " + in.Text), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "Add two numbers.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, func(_ context.Context, _ *sdk.CallToolRequest, in addIn) (*sdk.CallToolResult, any, error) {
		return text(strconv.Itoa(in.A + in.B)), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "hang", Description: "Never answers."}, func(ctx context.Context, _ *sdk.CallToolRequest, _ noIn) (*sdk.CallToolResult, any, error) {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	sdk.AddTool(s, &sdk.Tool{Name: "pid", Description: "The server's process id."}, func(context.Context, *sdk.CallToolRequest, noIn) (*sdk.CallToolResult, any, error) {
		return text(strconv.Itoa(os.Getpid())), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "picture", Description: "A caption and an image."}, func(context.Context, *sdk.CallToolRequest, noIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.TextContent{Text: "a red dot"},
			&sdk.ImageContent{MIMEType: "image/png", Data: []byte("\x89PNG\r\n\x1a\nfake")},
		}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Always fails."}, func(context.Context, *sdk.CallToolRequest, noIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "the widget is broken"}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "env", Description: "A variable of the server's environment."}, func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
		v, ok := os.LookupEnv(in.Text)
		if !ok {
			return text(in.Text + " is not set"), nil, nil
		}
		return text(in.Text + "=" + v), nil, nil
	})
	for i := range extra {
		name := fmt.Sprintf("tool_%d", i)
		sdk.AddTool(s, &sdk.Tool{Name: name, Description: fmt.Sprintf("Look something up in source %d of the test server.", i)},
			func(_ context.Context, _ *sdk.CallToolRequest, in extraIn) (*sdk.CallToolResult, any, error) {
				return text(name + ": " + in.Query), nil, nil
			})
	}
	return s
}

// Serve runs the server on stdin and stdout and exits, when ServeEnv is
// set; otherwise it skips t. Call it from a test named in Command.
func Serve(t *testing.T) {
	if os.Getenv(ServeEnv) != "1" {
		t.Skip("runs only as the MCP server child of another test")
	}
	if d, err := time.ParseDuration(os.Getenv(StartDelayEnv)); err == nil {
		time.Sleep(d) // a server that is slow to start, for start-up measurements
	}
	extra, _ := strconv.Atoi(os.Getenv(ExtraEnv))
	err := NewServer(extra).Run(context.Background(), &sdk.StdioTransport{})
	if err != nil && err != context.Canceled {
		fmt.Fprintln(os.Stderr, "mcptest:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Command returns the command and arguments that run the test binary as
// the stdio server: the test named testName must call Serve. The child
// needs ServeEnv=1 in its environment.
func Command(testName string) (string, []string) {
	return os.Args[0], []string{"-test.run=^" + testName + "$", "-test.count=1"}
}

// NewHTTPServer serves NewServer(extra) over streamable HTTP until the test
// ends; the endpoint is the returned URL.
func NewHTTPServer(t testing.TB, extra int, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	return ServeHTTP(t, NewServer(extra), wrap)
}

// ServeHTTP serves s over streamable HTTP until the test ends; the
// endpoint is the returned URL. wrap, when set, wraps the handler.
func ServeHTTP(t testing.TB, s *sdk.Server, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	var h http.Handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// AddTool adds the tool name {} to s, answering "<name> here": a change of
// its tool list, which s announces to its clients with
// notifications/tools/list_changed.
func AddTool(s *sdk.Server, name string) {
	sdk.AddTool(s, &sdk.Tool{Name: name, Description: "A tool added while the server runs."}, func(context.Context, *sdk.CallToolRequest, noIn) (*sdk.CallToolResult, any, error) {
		return text(name + " here"), nil, nil
	})
}

// RemoveTool removes the tool name from s, which s announces as AddTool
// does.
func RemoveTool(s *sdk.Server, name string) { s.RemoveTools(name) }
