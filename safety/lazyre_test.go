package safety

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestLazyRegexpsCompile compiles every expression the package gives lazy,
// so a broken one fails here rather than in the middle of a judgement.
func TestLazyRegexpsCompile(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	n := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(node ast.Node) bool {
			call, ok := node.(*ast.CallExpr)
			if !ok || len(call.Args) != 1 {
				return true
			}
			if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != "lazy" {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok {
				t.Errorf("%s: lazy takes a string literal, so this test can check it", fset.Position(call.Pos()))
				return true
			}
			src, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatalf("%s: %v", fset.Position(lit.Pos()), err)
			}
			if _, err := regexp.Compile(src); err != nil {
				t.Errorf("%s: %v", fset.Position(lit.Pos()), err)
			}
			n++
			return true
		})
	}
	if n < 50 {
		t.Errorf("found %d lazy expressions, want the filter's dozens: is the test looking in the right place?", n)
	}
}
