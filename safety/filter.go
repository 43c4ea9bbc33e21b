// Package safety decides which shell commands the assistant may run, keeps
// file access inside the workspace, guards outgoing web requests and removes
// secrets from text. It depends only on the standard library and the shell
// parser mvdan.cc/sh/v3.
package safety

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
)

// Action is the decision of the command filter.
type Action string

// The three possible decisions.
const (
	Allow Action = "allow"
	Ask   Action = "ask"
	Deny  Action = "deny"
)

// Verdict is the judgement of one command line. Category and Reason are empty
// for Allow.
type Verdict struct {
	Action   Action
	Category string
	Reason   string
}

// String renders the verdict as "allow", "ask\tcategory: reason" or
// "deny\tcategory: reason".
func (v Verdict) String() string {
	if v.Action == Allow {
		return string(Allow)
	}
	return fmt.Sprintf("%s\t%s: %s", v.Action, v.Category, v.Reason)
}

// PolicyConfig configures a Policy.
type PolicyConfig struct {
	Workspace string   // absolute path of the workspace
	Home      string   // the user's home dir (for ~)
	Protected []string // absolute paths never to be touched: config file, database, binary
	// Deny and Allow are rules matched against each simple command of a line:
	// an argv prefix ("git push") or a regular expression ("re:^npm (i|install) -g").
	// Both are matched as written and after each wrapper (sudo, env, nice,
	// timeout, xargs; sh -c is judged as a line of its own). A deny rule
	// also matches what the command means: git after its global options and
	// -c aliases, "git config alias.x push", and for other programs words
	// starting with "-" (and their values) skipped before each rule word. An
	// allow rule overrides the built-in verdict of the simple command it
	// matches, but not that of an owner's deny rule, not through sudo and
	// friends, and through git's global options only when they change
	// nothing (-P, --no-pager, the pathspec flags).
	Deny, Allow []string
	// Categories overrides the default action of a category, e.g.
	// {"package_install": Allow}.
	Categories map[string]Action
	// AllowPrivate lets network clients reach private networks and cloud
	// metadata services, as tools.web.allow_private does for web_fetch.
	AllowPrivate bool
	// Resolver, when set, resolves the host names network clients in a
	// command connect to, so that a name leading to a metadata service or
	// a private network is judged like its address. Lookups are cached and
	// bounded (lookupBudget, maxLookups); a name that does not resolve is
	// judged by its spelling. Without one, names are judged by spelling only.
	Resolver Resolver
}

// Policy judges shell commands. It is safe for concurrent use.
type Policy struct {
	workspace  string
	home       string
	protected  []string
	selfNames  []string
	deny       []rule
	allow      []rule
	categories map[string]Action
	wrappers   map[string]optSpec
	handlers   map[string]handler
	homeLists  map[string][]string
	guard      *URLGuard
	dns        *dnsCache // nil without a resolver
	// allowPrivate is PolicyConfig.AllowPrivate.
	allowPrivate bool
}

// maxCommandLen bounds the size of a command line the filter agrees to read.
const maxCommandLen = 64 << 10

// NewPolicy validates cfg and builds a Policy. It fails on a relative
// workspace, an invalid rule or an unknown action in Categories.
func NewPolicy(cfg PolicyConfig) (*Policy, error) {
	if !filepath.IsAbs(cfg.Workspace) {
		return nil, fmt.Errorf("workspace %q: must be an absolute path", cfg.Workspace)
	}
	p := &Policy{
		workspace:  filepath.Clean(cfg.Workspace),
		categories: map[string]Action{},
		wrappers:   wrapperSpecs(),
		handlers:   commandHandlers(),
		guard:      NewURLGuard(false),

		allowPrivate: cfg.AllowPrivate,
	}
	if cfg.Resolver != nil {
		p.dns = newDNSCache(cfg.Resolver)
	}
	if cfg.Home != "" {
		if !filepath.IsAbs(cfg.Home) {
			return nil, fmt.Errorf("home %q: must be an absolute path", cfg.Home)
		}
		p.home = filepath.Clean(cfg.Home)
	}
	p.homeLists = homeLists(p.home)
	seen := map[string]bool{}
	addProtected := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			p.protected = append(p.protected, s)
		}
	}
	self := map[string]bool{"nanobot": true}
	for _, pr := range cfg.Protected {
		if pr == "" {
			continue
		}
		if !filepath.IsAbs(pr) {
			return nil, fmt.Errorf("protected path %q: must be absolute", pr)
		}
		clean := filepath.Clean(pr)
		addProtected(clean)
		if real, err := Resolve(clean); err == nil {
			addProtected(real)
		}
		base := filepath.Base(clean)
		if filepath.Ext(base) == "" && len(base) >= 3 {
			self[base] = true
		}
	}
	for name := range self {
		p.selfNames = append(p.selfNames, name)
	}
	var err error
	if p.deny, err = parseRules(cfg.Deny); err != nil {
		return nil, fmt.Errorf("deny rules: %w", err)
	}
	if p.allow, err = parseRules(cfg.Allow); err != nil {
		return nil, fmt.Errorf("allow rules: %w", err)
	}
	for cat, a := range cfg.Categories {
		switch a {
		case Allow, Ask, Deny:
			p.categories[cat] = a
		default:
			return nil, fmt.Errorf("category %q: unknown action %q", cat, a)
		}
	}
	return p, nil
}

// Check judges one command line. It never panics: any internal failure and
// any line that does not parse is refused.
func (p *Policy) Check(command string) (v Verdict) {
	defer func() {
		if r := recover(); r != nil {
			v = Verdict{Action: Deny, Category: "unparsable", Reason: fmt.Sprintf("internal error while judging: %v", r)}
		}
	}()
	if len(command) > maxCommandLen {
		return Verdict{Action: Deny, Category: "unparsable", Reason: "command is too long to judge"}
	}
	if strings.ContainsRune(command, 0) {
		return Verdict{Action: Deny, Category: "obfuscation", Reason: "command contains a NUL byte"}
	}
	j := newJudge(p)
	j.script(command, j.rootScope())
	return j.verdict()
}

// rule is one tools.exec.deny or tools.exec.allow entry.
type rule struct {
	text   string
	prefix []string
	re     *regexp.Regexp
}

func parseRules(texts []string) ([]rule, error) {
	var rules []rule
	for _, t := range texts {
		if rx, ok := strings.CutPrefix(t, "re:"); ok {
			re, err := regexp.Compile(rx)
			if err != nil {
				return nil, fmt.Errorf("rule %q: %w", t, err)
			}
			rules = append(rules, rule{text: t, re: re})
			continue
		}
		f := strings.Fields(t)
		if len(f) == 0 {
			return nil, errors.New("empty rule")
		}
		rules = append(rules, rule{text: t, prefix: f})
	}
	return rules, nil
}

// match reports whether argv is matched by the rule. The first word is
// compared by its base name so that "/usr/bin/git push" matches "git push".
func (r rule) match(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	if r.re != nil {
		norm := append([]string{filepath.Base(argv[0])}, argv[1:]...)
		return r.re.MatchString(strings.Join(argv, " ")) || r.re.MatchString(strings.Join(norm, " "))
	}
	if len(argv) < len(r.prefix) {
		return false
	}
	for i, w := range r.prefix {
		a := argv[i]
		if i == 0 && !strings.Contains(w, "/") {
			a = filepath.Base(a)
		}
		if a != w {
			return false
		}
	}
	return true
}

// matchAny reports whether a deny rule matches one of the layers of a
// simple command or one of the forms it means (nil ones are skipped).
func (r rule) matchAny(layers []layer, forms ...[]string) bool {
	for _, l := range layers {
		if r.match(l.argv) || r.matchLoose(l.argv) {
			return true
		}
	}
	for _, f := range forms {
		if f != nil && (r.match(f) || r.matchLoose(f)) {
			return true
		}
	}
	return false
}

// matchAllow reports whether an allow rule matches a layer of a simple
// command, stopping at sudo and friends, or, when no such layer is in the
// way, the form it means, if its global options change nothing (plain).
func (r rule) matchAllow(layers []layer, meaning []string, plain bool) bool {
	for _, l := range layers {
		if r.match(l.argv) {
			return true
		}
		if l.privileged {
			return false // an allow rule does not reach through sudo and friends
		}
	}
	return plain && meaning != nil && r.match(meaning)
}

// maxLooseWords bounds how many words matchLoose reads.
const maxLooseWords = 64

// matchLoose is match for deny rules, reading argv the way a program with
// global options might (git, whose options are known, is read exactly by
// parseGit instead): before each word of the rule any word starting
// with "-" may be an option, taking the next word as its value or not. So
// "kubectl delete" matches "kubectl -n prod delete pod x". It errs towards
// matching, which for a deny rule means refusing more; allow rules never
// use it. Regular expressions are tried on the command with its leading
// options removed in each of those ways.
func (r rule) matchLoose(argv []string) bool {
	if len(argv) < 2 || filepath.Base(argv[0]) == "git" {
		return false
	}
	argv = argv[:min(len(argv), maxLooseWords)]
	if r.re != nil {
		base := filepath.Base(argv[0])
		for _, j := range optionEnds(argv, 1) {
			if j == 1 {
				continue // as written: match has tried it
			}
			rest := strings.Join(argv[j:], " ")
			if r.re.MatchString(strings.TrimSpace(argv[0]+" "+rest)) || r.re.MatchString(strings.TrimSpace(base+" "+rest)) {
				return true
			}
		}
		return false
	}
	if !r.matchWord(0, argv[0]) {
		return false
	}
	seen := map[[2]int]bool{}
	var from func(i, w int) bool
	from = func(i, w int) bool {
		if w == len(r.prefix) {
			return true
		}
		if seen[[2]int{i, w}] {
			return false
		}
		seen[[2]int{i, w}] = true
		for _, j := range optionEnds(argv, i) {
			if j < len(argv) && r.matchWord(w, argv[j]) && from(j+1, w+1) {
				return true
			}
		}
		return false
	}
	return from(1, 1)
}

// matchWord compares word w of a prefix rule with an argument; the first
// word by its base name, as in match.
func (r rule) matchWord(w int, a string) bool {
	if w == 0 && !strings.Contains(r.prefix[0], "/") {
		a = filepath.Base(a)
	}
	return a == r.prefix[w]
}

// optionEnds returns every position at which the options starting at
// argv[i] may end: each word starting with "-" is an option, and one
// without "=" may take the next word as its value.
func optionEnds(argv []string, i int) []int {
	reach := make([]bool, len(argv)+1)
	reach[i] = true
	var out []int
	for k := i; k <= len(argv); k++ {
		if !reach[k] {
			continue
		}
		out = append(out, k)
		if k == len(argv) || len(argv[k]) < 2 || argv[k][0] != '-' {
			continue
		}
		reach[k+1] = true
		if !strings.Contains(argv[k], "=") && k+2 <= len(argv) {
			reach[k+2] = true
		}
	}
	return out
}

// finding is one reason to refuse or question a command, owned by the simple
// command that caused it (owner < 0: the line as a whole).
type finding struct {
	action   Action
	category string
	reason   string
	owner    int
	rule     bool
}

// categoryRank orders deny categories so that the most telling one is
// reported when a line has several problems.
var categoryRank = []string{
	"unparsable", "self_tamper", "reverse_shell", "download_exec", "exfiltration",
	"raw_device", "power", "resource_exhaustion", "anti_forensics", "destroy_data",
	"persistence", "secrets", "system_config", "services", "privilege",
	"permissions", "obfuscation", "rule", "containers", "remote_destructive", "git_remote", "publish",
	"package_install", "network_listener", "internal_network",
}

func rankOf(cat string) int {
	for i, c := range categoryRank {
		if c == cat {
			return i
		}
	}
	return len(categoryRank)
}

func severity(a Action) int {
	switch a {
	case Deny:
		return 2
	case Ask:
		return 1
	}
	return 0
}

func (j *judge) verdict() Verdict {
	if j.sockets > 0 && j.fdShells > 0 {
		j.add(-1, Deny, "reverse_shell", "wires a shell to a network connection held in a descriptor")
	}
	allowed := map[int]bool{}
	for _, o := range j.allowedOwners {
		allowed[o] = true
	}
	best := Verdict{Action: Allow}
	bestRank := 0
	for _, f := range j.findings {
		if !f.rule && f.owner >= 0 && allowed[f.owner] {
			continue
		}
		a := f.action
		if o, ok := j.p.categories[f.category]; ok && !f.rule {
			a = o
		}
		if a == Allow {
			continue
		}
		r := rankOf(f.category)
		if severity(a) > severity(best.Action) || (severity(a) == severity(best.Action) && r < bestRank) {
			best = Verdict{Action: a, Category: f.category, Reason: f.reason}
			bestRank = r
		}
	}
	return best
}
