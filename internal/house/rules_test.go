package house

import (
	"slices"
	"strings"
	"testing"
)

// body returns n lines of statements, to make functions and files of a given length.
func body(n int) string { return strings.Repeat("\t_ = 0\n", n) }

func TestCheckFile(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // the positions reported, in order
	}{
		{"short function", "package p\nfunc f() {\n" + body(78) + "}\n", nil},
		{"function at the limit", "package p\nfunc f() {\n" + body(maxFuncLines-2) + "}\n", nil},
		{"function over the limit", "package p\nfunc f() {\n" + body(maxFuncLines-1) + "}\n", []string{"p.go:2"}},
		{"method over the limit", "package p\ntype T struct{}\nfunc (*T) m() {\n" + body(90) + "}\n", []string{"p.go:3"}},
		{"long with a reason", "package p\n// f is one table.\n//\n// long: one switch over the wire format\nfunc f() {\n" + body(90) + "}\n", nil},
		{"long mark not directly above", "package p\n// long: stale\n\nfunc f() {\n" + body(90) + "}\n", []string{"p.go:4"}},
		{"context field", "package p\nimport \"context\"\ntype T struct {\n\tctx context.Context\n}\n", []string{"p.go:4"}},
		{"embedded context", "package p\nimport \"context\"\ntype T struct {\n\tcontext.Context\n}\n", []string{"p.go:4"}},
		{"aliased context in a nested struct", "package p\nimport stdctx \"context\"\nvar v struct {\n\tin struct{ c stdctx.Context }\n}\n", []string{"p.go:4"}},
		{"context as a parameter", "package p\nimport \"context\"\nfunc f(ctx context.Context) {}\n", nil},
		{"cancel func is fine", "package p\nimport \"context\"\ntype T struct {\n\tstop context.CancelFunc\n}\n", nil},
		{"file over the limit", "package p\nfunc f() {\n" + body(maxFileLines) + "}\n", []string{"p.go:1", "p.go:2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs, err := checkFile("p.go", []byte(tt.src))
			if err != nil {
				t.Fatalf("checkFile: %v", err)
			}
			var got []string
			for _, v := range vs {
				got = append(got, v.pos)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("checkFile(%s) reported %v, want %v\n%v", tt.name, got, tt.want, vs)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"...", ".", true},
		{"...", "agent/tools", true},
		{"agent", "agent", true},
		{"agent", "agent/tools", false},
		{"agent/...", "agent", true},
		{"agent/...", "agent/openai/openaitest", true},
		{"agent/...", "agentx", false},
		{"cmd/...", "cmd/nanobot", true},
		{".", ".", true},
	}
	for _, tt := range tests {
		if got := match(tt.pattern, tt.path); got != tt.want {
			t.Errorf("match(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

func TestCheckRule(t *testing.T) {
	pkgs := []pkgInfo{
		{path: "agent", imports: []string{"internal/lazyre"}},
		{path: "agent/tools", imports: []string{"agent", "safety", "memory"}},
		{path: "cmd/nanobot", imports: []string{"config", "agent"}},
		{path: "config", imports: []string{"cmd/nanobot"}},
	}
	tests := []struct {
		name string
		rule importRule
		want []string // "pkg imports imp"
	}{
		{"allowlist kept", importRule{pkg: "agent", mayImport: []string{"internal/..."}}, nil},
		{"empty allowlist", importRule{pkg: "agent", mayImport: []string{}}, []string{"agent imports internal/lazyre"}},
		{"denylist", importRule{pkg: "agent/...", mustNot: []string{"memory/..."}}, []string{"agent/tools imports memory"}},
		{"except", importRule{pkg: "...", mustNot: []string{"config"}, except: []string{"cmd/..."}}, nil},
		{"nothing imports cmd", importRule{pkg: "...", mustNot: []string{"cmd/..."}}, []string{"config imports cmd/nanobot"}},
		{"no package matches", importRule{pkg: "session", mayImport: []string{}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, v := range checkRule(tt.rule, pkgs) {
				imp, _, _ := strings.Cut(strings.TrimPrefix(v.what, "imports "), " ")
				got = append(got, v.pos+" imports "+imp)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("checkRule(%s) = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}
