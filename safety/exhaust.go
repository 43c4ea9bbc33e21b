package safety

import (
	"math"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/nanobot-go/nanobot/internal/lazyre"
)

// Commands that never end on their own or allocate without bound: endless
// loops that never pause, endless streams poured into nowhere, programs
// asking for more memory than a machine has.

var (
	reInfLoop = lazyre.New(`(?i)\bwhile\s*\(?\s*(?:true|1|\$true)\s*\)?\s*(?::|\{|do\b|;|\n|$)|\bwhile\s*\(\s*(?:true|1|\$true)\s*\)|\bwhile\s*\{\s*1\s*\}|\bfor\s*\(\s*;\s*;\s*\)|\bloop\s*(?:do\b|\{)|\(loop\s|\b1\s+while\s+1\b|\buntil\s*\(?\s*false\b|\brepeat\s*\{|iter\(\s*int\s*,\s*1\s*\)|itertools\.(?:count|cycle|repeat)\(\)|Stream\.(?:cycle|iterate|repeatedly)|\bwhile\s*\(\s*TRUE\s*\)`)
	// reLoopExit are the ways out of a loop, or of spinning in it.
	reLoopExit = lazyre.New(`(?i)\b(?:break|return|exit|die|last|sleep|usleep|nanosleep|recv|recvfrom|accept|readline|readlines|read|input|gets|stdin|wait|select|poll|join|quit|_exit|yield|await|settimeout|setinterval|throw|raise|halt|receive|abort)\b`)
	rePower    = lazyre.New(`(\d[\d_]*)(?:\.\d+)?\s*\*\*\s*\(?\s*(\d[\d_]*)(?:\s*\*\*\s*(\d[\d_]*))?`)
	reCaret    = lazyre.New(`(\d[\d_]*)(?:\.\d+)?\s*\^\s*\(?\s*(\d[\d_]*)(?:\s*\^\s*(\d[\d_]*))?`)
	reSciNum   = lazyre.New(`\b(\d+(?:\.\d+)?)[eE]\+?(\d+)\b`)
	reShiftNum = lazyre.New(`\b(\d+)\s*<<\s*(\d+)`)
	reLongNum  = lazyre.New(`\b\d[\d_]{9,}\b`)
	reAllocCtx = lazyre.New(`(?i)['"\]]\s*\*|\*\s*['"\[]|['"]\s*x\s*[\d(]|bytearray\(|\bbytes\(|Buffer\.(?:alloc|allocUnsafe)\(|new\s+(?:Array|ArrayBuffer|Uint8Array|Float64Array|Int32Array)\(|\bArray\(|\.repeat\(|\brange\(|\blist\(|malloc\(|calloc\(|zeros\(|ones\(|empty\(|\brep\(|string\.rep\(|str_repeat\(|\.fill\(|\bfill\(|mmap\(|\bmake\(|String\.duplicate|List\.duplicate|\.ljust\(|\.rjust\(|\.center\(|\.zfill\(|\.padEnd\(|\.padStart\(`)
)

// codeExhaustion refuses programs that spin forever or allocate without
// bound.
func (c *call) codeExhaustion(lang, code string) {
	code = escapedBreaks.Replace(code) // programs inside strings handed to exec()
	lower := strings.ToLower(code)
	loops := containsAny(lower, "while", "for", "loop", "until", "repeat", "iter", "itertools", "stream")
	if loops && (reInfLoop.MatchString(code) || lang == "r" && reRepeat.MatchString(code)) && !reLoopExit.MatchString(code) {
		c.deny("resource_exhaustion", lang+" runs an endless loop that never pauses")
		return
	}
	power := rePower
	if lang == "r" || lang == "julia" || lang == "lua" {
		power = reCaret
	}
	if !reManyDigits.MatchString(code) && !strings.Contains(code, "**") && !strings.ContainsAny(code, "^eE<") {
		return // no number large enough to matter
	}
	digits := hugestNumber(code, power)
	switch {
	case digits >= 1e5:
		c.deny("resource_exhaustion", lang+" computes a number too large to hold in memory")
	case digits >= 9 && reAllocCtx.MatchString(code):
		c.deny("resource_exhaustion", lang+" allocates more memory than the machine has")
	}
}

// reManyDigits finds a number of three digits or more.
var reManyDigits = lazyre.New(`\d{3}`)

// reRepeat is R's endless loop.
var reRepeat = lazyre.New(`\brepeat\b`)

var escapedBreaks = strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\r`, "\r")

// hugestNumber returns the decimal digits (log10) of the largest number
// literal or constant expression in code.
func hugestNumber(code string, power *lazyre.Regexp) float64 {
	num := func(s string) float64 {
		f, _ := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
		return f
	}
	best := 0.0
	for _, m := range power.FindAllStringSubmatch(code, -1) {
		b, e := num(m[1]), num(m[2])
		if m[3] != "" {
			e = math.Pow(e, num(m[3]))
		}
		if b > 1 {
			best = max(best, e*math.Log10(b))
		}
	}
	for _, m := range reSciNum.FindAllStringSubmatch(code, -1) {
		if v := num(m[1]); v > 0 {
			best = max(best, math.Log10(v)+num(m[2]))
		}
	}
	for _, m := range reShiftNum.FindAllStringSubmatch(code, -1) {
		if v := num(m[1]); v > 0 {
			best = max(best, math.Log10(v)+num(m[2])*math.Log10(2))
		}
	}
	for _, m := range reLongNum.FindAllString(code, -1) {
		best = max(best, float64(len(strings.ReplaceAll(m, "_", ""))-1))
	}
	return best
}

// spinLoop refuses an endless shell loop made only of commands that
// return at once: it would spin until the command times out. A loop that
// runs anything else may be waiting for it.
func (j *judge) spinLoop(owner int, body []*syntax.Stmt) {
	spins := true
	for _, st := range body {
		syntax.Walk(st, func(n syntax.Node) bool {
			if ce, ok := n.(*syntax.CallExpr); ok && len(ce.Args) > 0 {
				switch baseName(ce.Args[0].Lit()) {
				case ":", "true", "false", "echo", "printf", "let", "test", "[", "expr", "date", "cat", "ls", "touch",
					"mkdir", "cp", "mv", "rm", "curl", "wget", "dd", "head", "yes", "seq", "openssl", "md5sum", "sha256sum", "tee":
				default:
					spins = false
				}
			}
			return spins
		})
	}
	if spins {
		j.add(owner, Deny, "resource_exhaustion", "endless loop that never pauses")
	}
}

var endlessDevices = map[string]bool{"/dev/zero": true, "/dev/urandom": true, "/dev/random": true}

// endlessStream judges the commands around an endless stream: it flows
// through filters, ends at a command that stops reading (head, dd count=,
// or any program of its own), and is refused where a command would read
// or write it forever.
func (c *call) endlessStream() {
	if c.name == "" {
		return
	}
	in := endlessDevices[c.stdinFile]
	for _, p := range c.in {
		in = in || p.endless
	}
	for _, a := range c.argv[1:] {
		if endlessDevices[a.val] {
			in = true
		}
	}
	switch c.name {
	case "yes":
		if c.stdinText == nil {
			c.ci.endless = true
		}
	case "dd":
		kv := map[string]string{}
		for _, a := range c.argv[1:] {
			if k, v, ok := strings.Cut(a.val, "="); ok {
				kv[k] = v
			}
		}
		_, counted := kv["count"]
		if !counted && (endlessDevices[kv["if"]] || kv["if"] == "" && in) {
			if _, out := kv["of"]; !out || endlessDevices[kv["of"]] || kv["of"] == "/dev/null" {
				c.ci.endless = true
			}
		}
	case "seq":
		c.ci.lines = seqLines(c.argv[1:])
		for _, a := range c.argv[1:] {
			if l := strings.ToLower(strings.TrimPrefix(a.val, "+")); l == "inf" || l == "infinity" {
				c.ci.endless = true
			}
		}
	case "cat", "pv", "tr", "base64", "base32", "xxd", "od", "hexdump", "hd", "fold", "cut", "rev", "nl",
		"gzip", "bzip2", "xz", "zstd", "lz4", "openssl", "tee", "expand", "iconv", "stdbuf", "strings":
		c.ci.endless = in
	case "grep", "egrep", "fgrep", "rg":
		if in && !c.hasAnyOpt("-m", "-q", "--max-count", "--quiet") {
			c.ci.endless = true
		}
	case "sed", "gsed":
		if in && !reSedQuit.MatchString(strings.Join(argTexts(c.argv[1:]), " ")) {
			c.ci.endless = true
		}
	case "awk", "gawk", "mawk", "nawk":
		if in && !strings.Contains(strings.Join(argTexts(c.argv[1:]), " "), "exit") {
			c.ci.endless = true
		}
	case "cp", "install", "rsync":
		if in {
			c.deny("resource_exhaustion", c.name+" copies an endless stream into a file")
		}
	case "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "md5sum", "b2sum", "cksum", "sum", "wc",
		"sort", "uniq", "shuf", "split", "sponge", "xargs", "tail", "tac":
		if in {
			c.deny("resource_exhaustion", c.name+" reads an endless stream and never finishes")
		}
	}
	if c.ci.endless && c.stdout != "" {
		c.deny("resource_exhaustion", c.name+" pours an endless stream into "+c.stdout)
	}
}

var reSedQuit = lazyre.New(`(^|[;\s/0-9$}])q(\s|$|;|\d)|(^|\s)-n\s+['"]?\d+p`)

// hasAnyOpt reports whether one of the options is written, alone or with
// an attached value.
func (c *call) hasAnyOpt(names ...string) bool {
	for _, a := range c.argv[1:] {
		for _, n := range names {
			if a.val == n || strings.HasPrefix(a.val, n+"=") || len(n) == 2 && strings.HasPrefix(a.val, n) {
				return true
			}
		}
	}
	return false
}

// endlessEnd refuses an endless stream that reaches the end of a pipeline:
// it would run until the command times out.
func (j *judge) endlessEnd(infos []*callInfo) {
	for _, ci := range infos {
		if ci.endless {
			j.add(ci.owner, Deny, "resource_exhaustion", ci.name+" produces an endless stream that nothing stops")
			return
		}
	}
}
