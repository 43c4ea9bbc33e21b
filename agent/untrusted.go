package agent

import (
	"strings"

	"github.com/nanobot-go/nanobot/internal/lazyre"
)

// The lines around content that came from outside: web pages, search
// results, MCP servers. The system prompt tells the model what they mean.
const (
	UntrustedBegin = "<<<EXTERNAL_UNTRUSTED_CONTENT>>>"
	UntrustedEnd   = "<<<END_EXTERNAL_UNTRUSTED_CONTENT>>>"
)

// markerWord finds the marker's name inside content, whatever the case or
// separators, so that a page cannot close the block early and speak as if
// from outside it.
var markerWord = lazyre.New(`(?i)external[\s_-]*untrusted[\s_-]*content`)

// Untrusted wraps text between the untrusted-content marker lines, with
// lookalikes of the markers inside it defused.
func Untrusted(text string) string {
	text = markerWord.ReplaceAllString(text, "[marker removed]")
	var b strings.Builder
	b.Grow(len(text) + len(UntrustedBegin) + len(UntrustedEnd) + 2)
	b.WriteString(UntrustedBegin)
	b.WriteByte('\n')
	b.WriteString(text)
	if !strings.HasSuffix(text, "\n") {
		b.WriteByte('\n')
	}
	b.WriteString(UntrustedEnd)
	return b.String()
}
