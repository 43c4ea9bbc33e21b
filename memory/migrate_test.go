package memory

import (
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	const both = "a;\n-- #if fts5\nfive;\n-- #else\nfour;\n-- #endif\nz;\n"
	tests := []struct {
		name, text string
		fts5       bool
		want       string
		err        string
	}{
		{name: "no directives", text: "CREATE TABLE t (x);\n-- a comment\n", want: "CREATE TABLE t (x);\n-- a comment\n"},
		{name: "if taken", text: both, fts5: true, want: "a;\nfive;\nz;\n"},
		{name: "else taken", text: both, want: "a;\nfour;\nz;\n"},
		{name: "no else", text: "-- #if fts5\nfive;\n-- #endif\nz;", want: "z;"},
		{name: "spaces around", text: "  -- #if fts5  \nfive;\n\t-- #endif\n", fts5: true, want: "five;\n"},
		{name: "ordinary comments stay", text: "-- if the chat is gone\n-- end of part\n", want: "-- if the chat is gone\n-- end of part\n"},
		{name: "unknown condition", text: "-- #if rtree\nx;\n-- #endif\n", err: `line 1: unknown condition "rtree"`},
		{name: "missing name", text: "-- #if\nx;\n-- #endif\n", err: `unknown condition ""`},
		{name: "nested", text: "-- #if fts5\n-- #if fts5\n-- #endif\n-- #endif\n", err: "line 2: #if inside another #if"},
		{name: "else alone", text: "-- #else\n", err: "line 1: misplaced"},
		{name: "two elses", text: "-- #if fts5\n-- #else\n-- #else\n-- #endif\n", err: "line 3: misplaced"},
		{name: "endif alone", text: "x;\n-- #endif\n", err: "line 2: misplaced"},
		{name: "unterminated", text: "-- #if fts5\nx;\n", err: "#if without its #endif"},
		{name: "unknown directive", text: "-- #ifdef fts5\n", err: "line 1: misplaced or unknown directive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := render(tt.text, migrationData{FTS5: tt.fts5}.conditions())
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("render = %q, %v; want an error containing %q", got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("render = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// Every shipped migration renders for both kinds of library, and no
// directive survives into the SQL.
func TestMigrationsRenderBothWays(t *testing.T) {
	for _, fts5 := range []bool{false, true} {
		ms, err := loadMigrations(migrationData{FTS5: fts5})
		if err != nil {
			t.Fatalf("fts5=%v: %v", fts5, err)
		}
		for _, m := range ms {
			if strings.Contains(m.sql, "-- #") {
				t.Errorf("fts5=%v: %s keeps a directive", fts5, m.name)
			}
		}
	}
}

// render never panics, and what it keeps is a subset of its input's lines.
func FuzzRender(f *testing.F) {
	f.Add("a;\n-- #if fts5\nb;\n-- #else\nc;\n-- #endif\n", true)
	f.Add("-- #if fts5\n-- #endif", false)
	f.Fuzz(func(t *testing.T, text string, fts5 bool) {
		out, err := render(text, migrationData{FTS5: fts5}.conditions())
		if err != nil {
			return
		}
		if len(out) > len(text) {
			t.Fatalf("render grew its input: %d > %d bytes", len(out), len(text))
		}
		if !strings.Contains(text, "-- #") && out != text {
			t.Fatalf("text without directives changed: %q -> %q", text, out)
		}
	})
}
