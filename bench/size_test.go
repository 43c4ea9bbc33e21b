//go:build bench

package bench

import (
	"cmp"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const (
	module  = "github.com/nanobot-go/nanobot"
	stdName = "standard library"
)

// programs are the tiny programs of bench/depcost, by the module each adds
// to the baseline.
var programs = map[string]string{
	"github.com/go-telegram/bot":         "telegram",
	"github.com/sashabaranov/go-openai":  "openai",
	"github.com/mattn/go-sqlite3":        "sqlite",
	"gopkg.in/yaml.v3":                   "yaml",
	"mvdan.cc/sh/v3":                     "sh",
	"github.com/VictoriaMetrics/metrics": "metrics",
}

// programNotes say what a tiny program counts beyond its module.
var programNotes = map[string]string{
	"github.com/mattn/go-sqlite3": "; its tiny program counts database/sql too, which nanobot needs for SQLite only",
}

// measureSize reports the release binary's size and returns the table of
// what each dependency costs in it, measured two ways: the tiny program of
// bench/depcost less the baseline program, and the bytes of the
// dependency's symbols in nanobot's own binary (built again unstripped).
func measureSize(t *testing.T, br *benchRun) string {
	fi, err := os.Stat(br.bin)
	if err != nil {
		t.Fatal(err)
	}
	stripped := fi.Size()
	br.rep.add("size", row{figure: "binary size, stripped", median: fmtMB(stripped), runs: "1 build",
		note: "CGO_ENABLED=1 CGO_CFLAGS=-Os go build -trimpath -tags sqlite_fts5 -ldflags=\"-s -w\"; SQLite's C library included"})

	dir := t.TempDir()
	build := func(out, pkg string, tags string, strip bool) int64 {
		t.Helper()
		args := []string{"build", "-trimpath", "-tags", tags, "-o", out}
		if strip {
			args = append(args, "-ldflags=-s -w")
		}
		cmd := exec.Command("go", append(args, pkg)...)
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1", "CGO_CFLAGS=-Os")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
		fi, err := os.Stat(out)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	baseline := build(filepath.Join(dir, "baseline"), "./bench/depcost/baseline", "bench,sqlite_fts5", true)
	tiny := map[string]int64{}
	for mod, prog := range programs {
		tiny[mod] = build(filepath.Join(dir, prog), "./bench/depcost/"+prog, "bench,sqlite_fts5", true) - baseline
	}
	syms := filepath.Join(dir, "nanobot-syms")
	build(syms, "./cmd/nanobot", "sqlite_fts5", false)
	pkgs, cgoMods, importers := packageModules(t)
	attr, err := attribute(syms, pkgs, cgoMods)
	if err != nil {
		t.Fatal(err)
	}
	return depTable(t, stripped, baseline, tiny, attr, pkgs, importers)
}

// packageModules maps every package linked into nanobot to its module
// (stdName for the standard library), lists the modules outside the
// standard library with C code, and says which modules import which.
func packageModules(t *testing.T) (pkgs map[string]string, cgo []string, importers map[string][]string) {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-tags", "sqlite_fts5", "-f",
		"{{.ImportPath}}\t{{with .Module}}{{.Path}}{{end}}\t{{len .CgoFiles}}\t{{join .Imports \" \"}}", "./cmd/nanobot")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs = map[string]string{}
	imports := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimRight(line, "\n"), "\t")
		if len(f) != 4 {
			continue
		}
		imports[f[0]] = strings.Fields(f[3])
		mod := f[1]
		if mod == "" {
			mod = stdName
		}
		pkgs[f[0]] = mod
		if f[2] != "0" && mod != stdName && !slices.Contains(cgo, mod) {
			cgo = append(cgo, mod)
		}
	}
	importers = map[string][]string{}
	for p, imps := range imports {
		for _, imp := range imps {
			from, to := pkgs[p], pkgs[imp]
			if from != to && to != stdName && !slices.Contains(importers[to], from) {
				importers[to] = append(importers[to], from)
			}
		}
	}
	return pkgs, cgo, importers
}

// attribution is what an unstripped binary's bytes add up to, by module.
type attribution struct {
	bytes  map[string]int64 // everything attributed
	cBytes map[string]int64 // of which C code and data
	pooled map[string]int64 // of which a share of the Go metadata without symbols
	none   int64            // ELF headers, dynamic linking tables
}

// attribute shares out the file-backed bytes of a binary by module.
//
// Go code and data lie between the linker's runtime.text/etext,
// rodata/erodata, data/edata and noptrdata/enoptrdata marks, and its
// function tables fill .gopclntab; the symbols there name their packages.
// What has no symbol of its own (type descriptors, string data, function
// tables, padding) is pooled and shared out in proportion to each module's
// Go code. Everything outside the marks in those sections is C, as are the
// unwind tables: it goes to the one module with C code, when there is one,
// except cgo's own runtime and the C start-up files.
func attribute(path string, pkgs map[string]string, cgoMods []string) (attribution, error) {
	f, err := elf.Open(path)
	if err != nil {
		return attribution{}, err
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return attribution{}, err
	}
	marks := map[string]uint64{}
	for _, s := range syms {
		if strings.HasPrefix(s.Name, "runtime.") {
			marks[s.Name] = s.Value
		}
	}
	var goRanges [][2]uint64
	for _, m := range []string{"text", "rodata", "data", "noptrdata", "pclntab"} {
		lo, ok1 := marks["runtime."+m]
		hi, ok2 := marks["runtime.e"+m]
		if !ok1 || !ok2 {
			return attribution{}, fmt.Errorf("%s: no runtime.%s/e%s marks", path, m, m)
		}
		goRanges = append(goRanges, [2]uint64{lo, hi})
	}
	for _, name := range []string{".gopclntab", ".typelink", ".itablink", ".go.buildinfo", ".go.fipsinfo", ".go.module"} {
		if s := f.Section(name); s != nil {
			goRanges = append(goRanges, [2]uint64{s.Addr, s.Addr + s.Size})
		}
	}
	goRanges = merge(goRanges)
	inGo := func(addr uint64) bool {
		for _, r := range goRanges {
			if addr >= r[0] && addr < r[1] {
				return true
			}
		}
		return false
	}
	cOwner := "C code"
	if len(cgoMods) == 1 {
		cOwner = cgoMods[0]
	}
	a := attribution{bytes: map[string]int64{}, cBytes: map[string]int64{}, pooled: map[string]int64{}}
	goText := map[string]int64{}
	var allGoText, pool int64
	covered := map[elf.SectionIndex][2]int64{} // Go, C bytes with a symbol
	for _, s := range syms {
		if s.Size == 0 || s.Section == elf.SHN_UNDEF || int(s.Section) >= len(f.Sections) {
			continue
		}
		sec := f.Sections[s.Section]
		if sec.Type == elf.SHT_NOBITS || sec.Flags&elf.SHF_ALLOC == 0 {
			continue
		}
		c := covered[s.Section]
		if !inGo(s.Value) {
			c[1] += int64(s.Size)
			covered[s.Section] = c
			mod := cOwner
			if isCgoRuntime(s.Name) {
				mod = stdName
			}
			a.bytes[mod] += int64(s.Size)
			a.cBytes[mod] += int64(s.Size)
			continue
		}
		c[0] += int64(s.Size)
		covered[s.Section] = c
		if s.Name == "go:func.*" { // function metadata of every package
			pool += int64(s.Size)
			continue
		}
		mod, ok := symbolModule(s.Name, pkgs)
		if !ok {
			mod = stdName // runtime/cgo's Go-side trampolines
		}
		a.bytes[mod] += int64(s.Size)
		if sec.Name == ".text" {
			goText[mod] += int64(s.Size)
			allGoText += int64(s.Size)
		}
	}
	for i, sec := range f.Sections {
		if sec.Type == elf.SHT_NOBITS || sec.Flags&elf.SHF_ALLOC == 0 {
			continue
		}
		var goLen int64
		for _, r := range goRanges {
			lo, hi := max(r[0], sec.Addr), min(r[1], sec.Addr+sec.Size)
			if lo < hi {
				goLen += int64(hi - lo)
			}
		}
		c := covered[elf.SectionIndex(i)]
		pool += goLen - c[0]
		rest := int64(sec.Size) - goLen - c[1]
		switch sec.Name {
		case ".text", ".rodata", ".data", ".data.rel.ro", ".eh_frame", ".eh_frame_hdr", ".init_array", ".fini_array":
			a.bytes[cOwner] += rest
			a.cBytes[cOwner] += rest
		default:
			a.none += rest
		}
	}
	for mod, n := range goText {
		share := pool * n / allGoText
		a.pooled[mod] = share
		a.bytes[mod] += share
	}
	return a, nil
}

// merge sorts address ranges and joins those that overlap.
func merge(rs [][2]uint64) [][2]uint64 {
	slices.SortFunc(rs, func(a, b [2]uint64) int { return cmp.Compare(a[0], b[0]) })
	var out [][2]uint64
	for _, r := range rs {
		if n := len(out); n > 0 && r[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], r[1])
			continue
		}
		out = append(out, r)
	}
	return out
}

// symbolModule finds the module of a Go symbol from the package path it
// starts with; isGo is false for names that start with no package (C).
func symbolModule(name string, pkgs map[string]string) (mod string, isGo bool) {
	meta := false // compiler-made: type descriptors and itabs
	for _, p := range []string{"type:.eq.", "type:.hash.", "type:.namedata.", "type:.importpath.", "type:*", "type:", "go:itab.*", "go:itab."} {
		if rest, ok := strings.CutPrefix(name, p); ok {
			name, meta = rest, true
			break
		}
	}
	if strings.HasPrefix(name, "go:") { // the linker's own tables and string data
		return stdName, true
	}
	name = strings.ReplaceAll(name, "%2e", ".") // the linker escapes dots in a path's last element
	if rest, ok := strings.CutPrefix(name, "main."); ok {
		name = module + "/cmd/nanobot." + rest
	}
	if i := strings.IndexAny(name, "[("); i >= 0 { // generic shapes and methods hold other paths
		name = name[:i]
	}
	slash := strings.LastIndexByte(name, '/') + 1
	for i := len(name) - 1; i >= slash; i-- {
		if name[i] == '.' {
			if m, ok := pkgs[name[:i]]; ok {
				return m, true
			}
		}
	}
	if meta { // builtin and unnamed types: type:int, type:[]uint8, type:map[string]int
		return stdName, true
	}
	return "", false
}

// isCgoRuntime tells the C of runtime/cgo, the C start-up files and the
// libc glue from a library's C.
func isCgoRuntime(name string) bool {
	for _, p := range []string{"x_cgo_", "_cgo_", "crosscall", "_rt0", "__", "_start", "_init", "_fini", "_IO_", "_dl_",
		"frame_dummy", "register_tm_clones", "deregister_tm_clones", "threadentry", "fatalf", "_GLOBAL_OFFSET_TABLE_", "_DYNAMIC"} {
		if strings.HasPrefix(name, p) {
			return !strings.Contains(name, "_Cfunc_sqlite3")
		}
	}
	return false
}

// depTable renders the dependency costs as markdown.
func depTable(t *testing.T, stripped, baseline int64, tiny map[string]int64, a attribution, pkgs map[string]string, importers map[string][]string) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "edit", "-json")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod edit -json: %v", err)
	}
	var gomod struct {
		Require []struct {
			Path, Version string
			Indirect      bool
		}
	}
	if err := json.Unmarshal(out, &gomod); err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, m := range pkgs {
		linked[m] = true
	}
	inBinary := func(mod string) int64 { return a.bytes[mod] }
	shared := func(mod string) string {
		if a.pooled[mod] == 0 {
			return ""
		}
		return fmt.Sprintf("; %s of it the shared estimate", fmtSize(a.pooled[mod]))
	}
	var b strings.Builder
	b.WriteString("| module | tiny program over the baseline | in nanobot's binary | note |\n|---|---|---|---|\n")
	var sum int64
	for _, r := range gomod.Require {
		name := r.Path + " " + r.Version
		switch {
		case !linked[r.Path] && !r.Indirect:
			fmt.Fprintf(&b, "| %s | – | 0 | direct, used by tests only: not linked |\n", name)
		case !linked[r.Path]:
			continue
		default:
			kind := "direct"
			if r.Indirect {
				kind = "indirect, for " + strings.Join(slices.Sorted(slices.Values(importers[r.Path])), ", ")
			}
			note := kind + programNotes[r.Path]
			if c := a.cBytes[r.Path]; c > 0 {
				note += fmt.Sprintf("; %s of it C (SQLite itself)", fmtSize(c))
			}
			tp := "–"
			if n, ok := tiny[r.Path]; ok {
				tp = "+" + fmtSize(n)
			}
			sum += inBinary(r.Path)
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", name, tp, fmtSize(inBinary(r.Path)), note+shared(r.Path))
		}
	}
	own, std := inBinary(module), inBinary(stdName)
	sum += own + std
	fmt.Fprintf(&b, "| nanobot's own packages | – | %s | %s |\n", fmtSize(own), strings.TrimPrefix(shared(module), "; "))
	fmt.Fprintf(&b, "| standard library and runtime | %s (the baseline program) | %s | the baseline is bench/depcost/baseline, the standard library as nanobot uses it%s |\n",
		fmtSize(baseline), fmtSize(std), shared(stdName))
	fmt.Fprintf(&b, "| not attributed | – | %s | ELF headers and dynamic linking tables (%s in the unstripped build) |\n", fmtSize(stripped-sum), fmtSize(a.none))
	fmt.Fprintf(&b, "| total, stripped | – | %s | |\n", fmtSize(stripped))
	b.WriteString("\nTiny program: the stripped size of bench/depcost/NAME (the baseline plus the library used as nanobot uses it) " +
		"less the baseline's, so it includes the parts of the standard library only that library pulls in. " +
		"In nanobot's binary: the sizes of the module's symbols in nanobot built unstripped with the same flags " +
		"(code and data; the C code and data and its unwind tables to the module with C code), plus a share of what has no " +
		"symbol of its own (type descriptors, string data, function tables, padding) in proportion to its Go code: " +
		"an estimate for that share.\n")
	return b.String()
}
