package telegramtest

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxMessageUnits is Telegram's limit on a message's text after entity
// parsing, in UTF-16 code units.
const maxMessageUnits = 4096

// knownTags are the tags Telegram's HTML parse mode accepts.
var knownTags = map[string]bool{
	"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true, "s": true, "strike": true, "del": true,
	"span": true, "tg-spoiler": true, "a": true, "code": true, "pre": true, "blockquote": true, "tg-emoji": true,
}

// parseHTML parses text the way Telegram does for parse_mode=HTML and returns
// the visible text, or the description Telegram gives after "Bad Request:
// can't parse entities: ". It is stricter than Telegram in one respect: an
// '&' that does not start a character reference is an error rather than text.
// Like Telegram it does not care which entity contains which: that it fixes
// silently.
func parseHTML(text string) (string, error) {
	var out strings.Builder
	var stack []string
	for i := 0; i < len(text); {
		switch text[i] {
		case '<':
			n, err := parseTag(text, i, &stack)
			if err != nil {
				return "", err
			}
			i += n
		case '&':
			r, n := parseEntity(text[i:])
			if n == 0 {
				return "", fmt.Errorf("Unsupported HTML entity at byte offset %d", i)
			}
			out.WriteRune(r)
			i += n
		default:
			out.WriteByte(text[i])
			i++
		}
	}
	if len(stack) > 0 {
		return "", fmt.Errorf("Can't find end tag corresponding to start tag \"%s\"", stack[len(stack)-1])
	}
	return out.String(), nil
}

// parseTag reads the tag at text[at] and updates the stack of open tags.
func parseTag(text string, at int, stack *[]string) (int, error) {
	if at+1 < len(text) && text[at+1] == '/' {
		return parseEndTag(text, at, stack)
	}
	i := at + 1
	start := i
	for i < len(text) && isTagByte(text[i]) {
		i++
	}
	name := strings.ToLower(text[start:i])
	if !knownTags[name] {
		return 0, fmt.Errorf("Unsupported start tag \"%s\" at byte offset %d", name, at)
	}
	attrs, i, err := parseAttrs(text, i, name, at)
	if err != nil {
		return 0, err
	}
	switch {
	case name == "span" && attrs["class"] != "tg-spoiler":
		return 0, fmt.Errorf("Tag \"span\" must have class \"tg-spoiler\" at byte offset %d", at)
	case name == "tg-emoji" && attrs["emoji-id"] == "":
		return 0, fmt.Errorf("Custom emoji entity must contain a valid custom emoji identifier at byte offset %d", at)
	}
	*stack = append(*stack, name)
	return i - at, nil
}

// parseEndTag reads the end tag at text[at], which must close the innermost open tag.
func parseEndTag(text string, at int, stack *[]string) (int, error) {
	i := at + 2
	start := i
	for i < len(text) && isTagByte(text[i]) {
		i++
	}
	name := strings.ToLower(text[start:i])
	for i < len(text) && text[i] == ' ' {
		i++
	}
	if i >= len(text) || text[i] != '>' {
		return 0, fmt.Errorf("Unclosed end tag at byte offset %d", at)
	}
	n := len(*stack)
	if n == 0 {
		return 0, fmt.Errorf("Unexpected end tag at byte offset %d", at)
	}
	if top := (*stack)[n-1]; top != name {
		return 0, fmt.Errorf("Unmatched end tag at byte offset %d, expected \"</%s>\", found \"</%s>\"", at, top, name)
	}
	*stack = (*stack)[:n-1]
	return i + 1 - at, nil
}

// parseAttrs reads the attributes of the start tag name (at byte at) from text[i] up to and
// including its '>', and returns them decoded with the index past the tag.
func parseAttrs(text string, i int, name string, at int) (map[string]string, int, error) {
	attrs := map[string]string{}
	for {
		for i < len(text) && isHTMLSpace(text[i]) {
			i++
		}
		if i >= len(text) {
			return nil, 0, fmt.Errorf("Unclosed start tag at byte offset %d", at)
		}
		if text[i] == '>' {
			return attrs, i + 1, nil
		}
		aStart := i
		for i < len(text) && isTagByte(text[i]) {
			i++
		}
		if i == aStart {
			return nil, 0, fmt.Errorf("Empty attribute name in the tag \"%s\" at byte offset %d", name, at)
		}
		attr := strings.ToLower(text[aStart:i])
		if i < len(text) && text[i] != '=' {
			attrs[attr] = "" // a boolean attribute such as expandable
			continue
		}
		i++
		if i >= len(text) {
			return nil, 0, fmt.Errorf("Unclosed start tag at byte offset %d", at)
		}
		var value string
		if q := text[i]; q == '"' || q == '\'' {
			end := strings.IndexByte(text[i+1:], q)
			if end < 0 {
				return nil, 0, fmt.Errorf("Unclosed start tag at byte offset %d", at)
			}
			value = text[i+1 : i+1+end]
			i += end + 2
		} else {
			vStart := i
			for i < len(text) && !isHTMLSpace(text[i]) && text[i] != '>' {
				i++
			}
			value = text[vStart:i]
		}
		decoded, err := decodeEntities(value, at)
		if err != nil {
			return nil, 0, err
		}
		attrs[attr] = decoded
	}
}

func decodeEntities(s string, at int) (string, error) {
	if !strings.Contains(s, "&") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '&' {
			b.WriteByte(s[i])
			i++
			continue
		}
		r, n := parseEntity(s[i:])
		if n == 0 {
			return "", fmt.Errorf("Unsupported HTML entity in the tag at byte offset %d", at)
		}
		b.WriteRune(r)
		i += n
	}
	return b.String(), nil
}

// parseEntity decodes &lt; &gt; &amp; &quot; or a numeric character
// reference at the start of s; n == 0 if there is none.
func parseEntity(s string) (r rune, n int) {
	end := strings.IndexByte(s, ';')
	if end < 2 || end > 16 {
		return 0, 0
	}
	switch body := s[1:end]; body {
	case "lt":
		return '<', end + 1
	case "gt":
		return '>', end + 1
	case "amp":
		return '&', end + 1
	case "quot":
		return '"', end + 1
	default:
		if body[0] != '#' {
			return 0, 0
		}
		digits, base := body[1:], 10
		if strings.HasPrefix(digits, "x") || strings.HasPrefix(digits, "X") {
			digits, base = digits[1:], 16
		}
		v, err := strconv.ParseUint(digits, base, 32)
		if err != nil || digits == "" || digits[0] == '+' || v == 0 || v > utf8.MaxRune || (v >= 0xD800 && v <= 0xDFFF) {
			return 0, 0
		}
		return rune(v), end + 1
	}
}

func isTagByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

func isHTMLSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// utf16Len counts s the way Telegram limits message length.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// checkText applies sendMessage's rules to text and parse mode and returns
// the text the recipient would see, or the description of a 400 error.
func checkText(text, parseMode string) (string, string) {
	if strings.TrimSpace(text) == "" {
		return "", "Bad Request: message text is empty"
	}
	if !utf8.ValidString(text) {
		return "", "Bad Request: text must be encoded in UTF-8"
	}
	visible := text
	switch strings.ToLower(parseMode) {
	case "":
	case "html":
		v, err := parseHTML(text)
		if err != nil {
			return "", "Bad Request: can't parse entities: " + err.Error()
		}
		visible = v
	case "markdown", "markdownv2":
		// Accepted unchecked: the daemon sends HTML.
	default:
		return "", "Bad Request: unsupported parse_mode"
	}
	visible = strings.TrimSpace(visible)
	if visible == "" {
		return "", "Bad Request: message text is empty"
	}
	if utf16Len(visible) > maxMessageUnits {
		return "", "Bad Request: message is too long"
	}
	return visible, ""
}
