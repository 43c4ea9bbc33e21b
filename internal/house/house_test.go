package house

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Limits of the house for non-test Go files.
const (
	maxFileLines = 600
	maxFuncLines = 80 // from the func line to the closing brace
)

// longMark starts a line of the comment directly above a function that may exceed maxFuncLines,
// saying why it reads better whole: `// long: one switch over the wire format`.
const longMark = "long:"

// exempt lists module-relative package directories (and single files) that the size and context
// rules skip while they are being rewritten. It must shrink to empty: take an entry out as soon as
// its package keeps the rules. A directory entry covers that directory only, not its subdirectories.
// The import rules apply to every package regardless.
var exempt = []string{}

// importRule constrains the module-internal imports of the packages that pkg matches. Patterns
// are module-relative: "agent" is that package, "agent/..." is it and everything below, "..." is
// every package, and "." is the module's root package.
//
// With mayImport set (even to an empty list) the rule is an allowlist: a matched package may
// import only module packages matching one of its patterns. mustNot is a denylist checked in any
// case. Packages matching except are not constrained by the rule.
type importRule struct {
	pkg       string
	mayImport []string
	mustNot   []string
	except    []string
	why       string
}

// testDoubles are the packages that exist for tests; production code never imports them.
var testDoubles = []string{
	"agent/agenttest",
	"agent/mcp/mcptest",
	"agent/openai/openaitest",
	"agent/openai/providertest",
	"channels/telegram/telegramtest",
	"internal/swaptest",
	"schedule/scheduletest",
}

// rules is the one table of import directions: dependencies point inward, from cmd/nanobot down to
// agent, safety, config and internal. Edit the directions here; a row may name packages that do
// not exist yet (it then constrains nothing until they do). Only non-test imports are checked.
var rules = []importRule{
	{pkg: "...", mustNot: []string{"cmd/..."}, why: "cmd is the top of the house; nothing imports it"},
	{pkg: "...", mustNot: testDoubles, except: testDoubles, why: "test doubles serve tests only"},
	{pkg: "...", mustNot: []string{"daemon"}, except: []string{"cmd/..."}, why: "the composition root serves main alone"},
	{pkg: "...", mustNot: []string{"config"}, except: []string{"cmd/...", "daemon"},
		why: "only the wiring reads the config; packages take plain values"},

	{pkg: "internal/...", mayImport: []string{"internal/..."}, why: "internal helpers are leaves"},
	{pkg: "session", mayImport: []string{"internal/..."}, why: "a session is a plain type at the bottom"},
	{pkg: "admin", mayImport: []string{"internal/..."}, why: "admin is a leaf"},
	{pkg: "config", mayImport: []string{"internal/..."}, why: "config is at the bottom"},
	{pkg: "safety", mayImport: []string{"internal/..."}, why: "safety is pure: stdlib and the shell parser"},
	{pkg: "safety/sandbox", mayImport: []string{"safety", "internal/..."}, why: "the sandbox sits under safety"},
	{pkg: "schedule", mayImport: []string{"internal/..."}, why: "schedule knows time and due-ness only"},
	{pkg: "schedule/scheduletest", mayImport: []string{"schedule", "internal/..."}, why: "a double of schedule"},

	{pkg: "agent", mayImport: []string{"internal/..."}, why: "the domain imports no other package of the module"},
	{pkg: "agent/...", mustNot: []string{"channels/...", "memory/...", "jobs", "heartbeat", "turns", "daemon", "admin"},
		why: "the agent side knows no channel, storage or proactive source"},
	{pkg: "agent/openai/...", mayImport: []string{"agent", "internal/..."}, why: "a provider is an adapter to agent"},
	{pkg: "agent/mcp/...", mayImport: []string{"agent", "agent/mcp", "internal/..."}, why: "MCP turns servers into agent tools"},
	{pkg: "agent/prompt", mayImport: []string{"agent", "safety", "internal/..."}, why: "prompt assembly reads the workspace only"},

	{pkg: "channels/...", mustNot: []string{"memory/...", "jobs", "heartbeat", "schedule/..."},
		why: "channels are intake and sender; storage is reached through interfaces"},
	{pkg: "channels/telegram/markup", mayImport: []string{"internal/..."}, why: "rendering is pure"},
	{pkg: "channels/approvals", mayImport: []string{"internal/..."}, why: "the approvals broker is a leaf both sides import"},

	{pkg: "turns", mayImport: []string{"agent", "internal/..."},
		why: "the turn engine knows the loop's vocabulary; sources, storage and channels plug in through its interfaces"},

	{pkg: "turns/budget", mayImport: []string{"agent", "session", "internal/..."}, why: "the budget reads usage through its own interface"},

	{pkg: "memory", mayImport: []string{"agent", "agent/subagent", "jobs", "session", "turns", "internal/..."},
		why: "storage implements its consumers' interfaces in their own types and knows no channel or adapter"},
	{pkg: "jobs", mayImport: []string{"agent", "schedule", "session", "turns", "internal/..."}, why: "jobs know time and the turn engine, not Telegram or SQLite"},
	{pkg: "heartbeat", mayImport: []string{"agent", "schedule", "session", "turns", "internal/..."}, why: "the heartbeat knows time and the turn engine, not Telegram or SQLite"},
}

// violation is one broken rule, reported as "file:line: what".
type violation struct {
	pos  string
	what string
}

func (v violation) String() string { return v.pos + ": " + v.what }

func TestFileAndFunctionSize(t *testing.T) {
	root := moduleRoot(t)
	var all []violation
	exemptViolations := map[string]int{} // by exempt entry, for the entries that could go
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(mustRel(t, root, path))
		if d.IsDir() {
			if path != root && skipDir(path, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		vs, err := checkFile(rel, src)
		if err != nil {
			return err
		}
		if e := exemptEntry(rel); e != "" {
			exemptViolations[e] += len(vs)
			return nil
		}
		all = append(all, vs...)
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	for _, e := range exempt {
		n, ok := exemptViolations[e]
		switch {
		case !ok:
			t.Errorf("exempt entry %q matches no Go file: take it out of the list", e)
		case n == 0:
			t.Logf("exempt entry %q keeps the rules now: take it out of the list", e)
		}
	}
	report(t, all)
}

func TestImportDirections(t *testing.T) {
	root := moduleRoot(t)
	pkgs := listPackages(t, root)
	var all []violation
	for _, r := range rules {
		all = append(all, checkRule(r, pkgs)...)
	}
	report(t, all)
}

// report fails the test once with every violation, sorted, one per line.
func report(t *testing.T, vs []violation) {
	t.Helper()
	if len(vs) == 0 {
		return
	}
	lines := make([]string, len(vs))
	for i, v := range vs {
		lines[i] = v.String()
	}
	slices.Sort(lines)
	t.Errorf("%d house rule violations:\n%s", len(vs), strings.Join(lines, "\n"))
}

// checkFile applies the size and context rules to one non-test file; name is how positions read.
func checkFile(name string, src []byte) ([]violation, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", name, err)
	}
	var vs []violation
	if n := lineCount(src); n > maxFileLines {
		vs = append(vs, violation{name + ":1", fmt.Sprintf("file has %d lines, limit %d", n, maxFileLines)})
	}
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
		n := end.Line - start.Line + 1
		if n > maxFuncLines && !hasLongMark(fd.Doc) {
			vs = append(vs, violation{pos(start), fmt.Sprintf("func %s has %d lines, limit %d (or a %q comment saying why)",
				funcName(fd), n, maxFuncLines, "// "+longMark)})
		}
	}
	vs = append(vs, contextFields(fset, f)...)
	return vs, nil
}

// contextFields reports every struct field, named or embedded, whose type is context.Context.
func contextFields(fset *token.FileSet, f *ast.File) []violation {
	local := contextImportName(f)
	if local == "" {
		return nil
	}
	var vs []violation
	ast.Inspect(f, func(n ast.Node) bool {
		st, ok := n.(*ast.StructType)
		if !ok {
			return true
		}
		for _, field := range st.Fields.List {
			if !isContextType(field.Type, local) {
				continue
			}
			name := "embedded"
			if len(field.Names) > 0 {
				name = field.Names[0].Name
			}
			vs = append(vs, violation{pos(fset.Position(field.Pos())),
				fmt.Sprintf("struct field %s is a context.Context; pass the context to the call instead", name)})
		}
		return true
	})
	return vs
}

func contextImportName(f *ast.File) string {
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil || path != "context" {
			continue
		}
		if imp.Name != nil {
			return imp.Name.Name
		}
		return "context"
	}
	return ""
}

func isContextType(e ast.Expr, local string) bool {
	if star, ok := e.(*ast.StarExpr); ok {
		e = star.X
	}
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Context" {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == local
}

func hasLongMark(doc *ast.CommentGroup) bool {
	if doc == nil {
		return false
	}
	for _, line := range strings.Split(doc.Text(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), longMark) {
			return true
		}
	}
	return false
}

func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fd.Name.Name
		}
		return fd.Name.Name
	}
}

func lineCount(src []byte) int {
	n := bytes.Count(src, []byte("\n"))
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n
}

func pos(p token.Position) string { return fmt.Sprintf("%s:%d", p.Filename, p.Line) }

// skipDir leaves out what is not this module's Go source: testdata, hidden and underscore
// directories, vendor, and nested modules.
func skipDir(path, name string) bool {
	if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
		return true
	}
	_, err := os.Stat(filepath.Join(path, "go.mod"))
	return err == nil
}

// exemptEntry returns the exempt entry covering the module-relative file rel, or "".
func exemptEntry(rel string) string {
	dir := filepath.ToSlash(filepath.Dir(rel))
	for _, e := range exempt {
		if e == rel || e == dir {
			return e
		}
	}
	return ""
}

// pkgInfo is one package of the module as go list reports it, with module-relative paths.
type pkgInfo struct {
	path    string
	imports []string // module-internal only
}

// listPackages asks go list for the module's packages and their non-test imports, built with the
// same tags as the rest of the house.
func listPackages(t *testing.T, root string) []pkgInfo {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("import directions need the go command: %v", err)
	}
	cmd := exec.CommandContext(t.Context(), goBin, "list", "-tags", "sqlite_fts5", "-json=ImportPath,Imports,Module", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs, err := decodePackages(out)
	if err != nil {
		t.Fatalf("go list output: %v", err)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no packages")
	}
	return pkgs
}

func decodePackages(out []byte) ([]pkgInfo, error) {
	type listed struct {
		ImportPath string
		Imports    []string
		Module     *struct{ Path string }
	}
	var pkgs []pkgInfo
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs, nil
		} else if err != nil {
			return nil, err
		}
		if p.Module == nil {
			continue
		}
		info := pkgInfo{path: relPkg(p.Module.Path, p.ImportPath)}
		for _, imp := range p.Imports {
			if imp == p.Module.Path || strings.HasPrefix(imp, p.Module.Path+"/") {
				info.imports = append(info.imports, relPkg(p.Module.Path, imp))
			}
		}
		pkgs = append(pkgs, info)
	}
}

func relPkg(module, path string) string {
	if path == module {
		return "."
	}
	return strings.TrimPrefix(path, module+"/")
}

// checkRule returns the imports of pkgs that rule r forbids.
func checkRule(r importRule, pkgs []pkgInfo) []violation {
	var vs []violation
	for _, p := range pkgs {
		if !match(r.pkg, p.path) || matchAny(r.except, p.path) {
			continue
		}
		for _, imp := range p.imports {
			bad := matchAny(r.mustNot, imp)
			if r.mayImport != nil && !matchAny(r.mayImport, imp) {
				bad = true
			}
			if bad {
				vs = append(vs, violation{p.path, fmt.Sprintf("imports %s (rule %q: %s)", imp, r.pkg, r.why)})
			}
		}
	}
	return vs
}

// match reports whether the module-relative package path matches pattern.
func match(pattern, path string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return pattern == path
}

func matchAny(patterns []string, path string) bool {
	for _, p := range patterns {
		if match(p, path) {
			return true
		}
	}
	return false
}

// moduleRoot walks up from the test's directory to the go.mod of the module.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("getwd: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod above the test's directory")
		}
		dir = parent
	}
}

func mustRel(t *testing.T, root, path string) string {
	t.Helper()
	rel, err := filepath.Rel(root, path)
	if err != nil {
		t.Fatalf("rel %s: %v", path, err)
	}
	return rel
}
