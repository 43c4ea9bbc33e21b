// Package lazyre holds regular expressions compiled on first use. The
// safety filter alone has dozens; compiled at start they cost every process
// of the daemon a millisecond and a megabyte and a half, also those that
// never judge a command. Write them as New("literal"):
// TestExpressionsCompile finds every such call in the module and compiles
// it, so a broken expression fails there rather than when first used.
package lazyre

import (
	"regexp"
	"sync"
)

// Regexp is a regular expression compiled on first use. It is safe for
// concurrent use.
type Regexp struct {
	src  string
	once sync.Once
	re   *regexp.Regexp
}

// New returns src, to be compiled on first use; it panics then if src
// does not compile, as regexp.MustCompile does.
func New(src string) *Regexp { return &Regexp{src: src} }

// Get is the compiled expression.
func (l *Regexp) Get() *regexp.Regexp {
	l.once.Do(func() { l.re = regexp.MustCompile(l.src) })
	return l.re
}

func (l *Regexp) MatchString(s string) bool  { return l.Get().MatchString(s) }
func (l *Regexp) FindString(s string) string { return l.Get().FindString(s) }
func (l *Regexp) FindStringSubmatch(s string) []string {
	return l.Get().FindStringSubmatch(s)
}
func (l *Regexp) FindAllString(s string, n int) []string {
	return l.Get().FindAllString(s, n)
}
func (l *Regexp) FindAllStringSubmatch(s string, n int) [][]string {
	return l.Get().FindAllStringSubmatch(s, n)
}
func (l *Regexp) ReplaceAllString(s, repl string) string {
	return l.Get().ReplaceAllString(s, repl)
}
func (l *Regexp) ReplaceAllStringFunc(s string, f func(string) string) string {
	return l.Get().ReplaceAllStringFunc(s, f)
}
func (l *Regexp) Split(s string, n int) []string { return l.Get().Split(s, n) }
func (l *Regexp) FindAllStringIndex(s string, n int) [][]int {
	return l.Get().FindAllStringIndex(s, n)
}
func (l *Regexp) FindAllStringSubmatchIndex(s string, n int) [][]int {
	return l.Get().FindAllStringSubmatchIndex(s, n)
}
