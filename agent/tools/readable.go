package tools

import (
	"bytes"
	"net/url"
	"strings"

	readability "codeberg.org/readeck/go-readability/v2"
	"codeberg.org/readeck/go-readability/v2/render"
	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
)

// maxReadableElems bounds the elements readability scores; a larger page
// is converted whole, which is linear, instead of scored.
const maxReadableElems = 100000

// readable extracts the title and main content of an HTML page, as
// Markdown or plain text (mode), with Mozilla's readability algorithm.
// When it finds no article, the whole body is converted. It never fails:
// broken HTML gives rough text.
func readable(body []byte, contentType string, page *url.URL, mode string) (out string) {
	r, err := charset.NewReader(bytes.NewReader(body), contentType)
	if err != nil {
		r = bytes.NewReader(body)
	}
	doc, err := html.Parse(r)
	if err != nil {
		return strings.ToValidUTF8(string(body), "\uFFFD")
	}
	title := docTitle(doc)
	var node *html.Node
	func() {
		// A page must never take the daemon down; a panic in the
		// extraction falls back to the whole document.
		defer func() { _ = recover() }()
		p := readability.NewParser()
		p.MaxElemsToParse = maxReadableElems
		// The parse mutates its input; the whole document stays for the
		// fallback.
		if a, err := p.ParseDocument(doc, page); err == nil && a.Node != nil {
			node = a.Node
			if t := strings.TrimSpace(a.Title()); t != "" {
				title = t
			}
		}
	}()
	if node == nil {
		node = bodyOf(doc)
	}
	var text string
	if mode == webMarkdown {
		if md, err := htmltomarkdown.ConvertNode(node, converter.WithDomain(origin(page))); err == nil {
			text = string(md)
		} else {
			mode = webText
		}
	}
	if mode == webText {
		text = render.InnerText(node)
	}
	text = strings.TrimSpace(text)
	title = strings.Join(strings.Fields(title), " ")
	switch {
	case title == "" || strings.HasPrefix(strings.TrimLeft(text, "# "), title):
		return text
	case mode == webMarkdown:
		return "# " + title + "\n\n" + text
	default:
		return title + "\n\n" + text
	}
}

// docTitle is the text of the document's <title>.
func docTitle(doc *html.Node) string {
	var find func(*html.Node) string
	find = func(n *html.Node) string {
		if n.Type == html.ElementNode && n.Data == "title" {
			return render.InnerText(n)
		}
		if n.Type == html.ElementNode && n.Data == "body" {
			return ""
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if t := find(c); t != "" {
				return t
			}
		}
		return ""
	}
	return find(doc)
}

// bodyOf is the <body> of doc, without scripts, styles and other parts
// that hold no text for a reader, or doc itself when it has none.
func bodyOf(doc *html.Node) *html.Node {
	var body *html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; {
			next := c.NextSibling
			if c.Type == html.ElementNode {
				switch c.Data {
				case "script", "style", "noscript", "template", "svg", "iframe", "object", "canvas", "head":
					n.RemoveChild(c)
					c = next
					continue
				case "body":
					body = c
				}
			}
			if c.Type == html.CommentNode {
				n.RemoveChild(c)
			} else {
				walk(c)
			}
			c = next
		}
	}
	walk(doc)
	if body == nil {
		return doc
	}
	return body
}

// origin is scheme://host of page, against which relative links resolve.
func origin(page *url.URL) string {
	if page == nil {
		return ""
	}
	return page.Scheme + "://" + page.Host
}
