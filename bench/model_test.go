//go:build bench

package bench

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/openai/openaitest"
)

// The bench's messages say what the model should do with them: plainText
// is answered "ok" at once, toolsText(n) after n list_dir rounds.
const plainText = "bench plain"

func toolsText(n int) string { return fmt.Sprintf("bench tools=%d", n) }

// model answers the daemon's requests from what they hold, so that
// concurrent chats and background consolidation cannot take each other's
// scripted replies. Every reply waits delay first.
type model struct{ delay time.Duration }

func (m model) reply(req goopenai.ChatCompletionRequest) openaitest.Reply {
	if req.ToolChoice != nil { // consolidation forces save_memory; turns never force a tool
		return openaitest.Reply{Delay: m.delay, ToolCalls: []agent.ToolCall{{ID: "mem", Name: "save_memory",
			Arguments: `{"history_entry":"The user ran the benchmark.","memory_update":"- The user benchmarks the assistant."}`}}}
	}
	if want, done := toolRounds(req.Messages); done < want {
		// Each round names the workspace differently: the same call three
		// times in a row would be stopped as a loop.
		path := "." + strings.Repeat("/.", done)
		return openaitest.Reply{Delay: m.delay, ToolCalls: []agent.ToolCall{{
			ID: fmt.Sprintf("call_%d", done+1), Name: "list_dir", Arguments: fmt.Sprintf(`{"path":%q}`, path)}}}
	}
	return openaitest.Reply{Delay: m.delay, Text: "ok"}
}

// toolRounds reads the tool rounds the user's last bench message asks for
// and counts the tool results that followed it.
func toolRounds(msgs []goopenai.ChatCompletionMessage) (want, done int) {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		switch {
		case m.Role == goopenai.ChatMessageRoleTool:
			done++
		case m.Role == goopenai.ChatMessageRoleUser && strings.Contains(m.Content, "bench "):
			if _, rest, ok := strings.Cut(m.Content, "tools="); ok {
				n, _ := strconv.Atoi(strings.Fields(rest)[0])
				return n, done
			}
			return 0, done
		}
	}
	return 0, done
}

// requestBytes is the size of a chat request as JSON. The stub decoded it
// into go-openai's request type, which go-openai had encoded it from, so
// encoding it again gives the body's size (map keys may come out in another
// order, at the same length).
func requestBytes(req goopenai.ChatCompletionRequest) int {
	b, err := json.Marshal(req)
	if err != nil {
		return -1
	}
	return len(b)
}

// isTurnRequest tells a turn's request for text from consolidation's.
func isTurnRequest(req goopenai.ChatCompletionRequest, text string) bool {
	if req.ToolChoice != nil {
		return false
	}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if m := req.Messages[i]; m.Role == goopenai.ChatMessageRoleUser && strings.Contains(m.Content, "bench ") {
			return strings.Contains(m.Content, text)
		}
	}
	return false
}
