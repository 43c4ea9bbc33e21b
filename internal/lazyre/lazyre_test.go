package lazyre

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestExpressionsCompile compiles every expression the module gives New,
// so a broken one fails here rather than in the middle of a judgement.
func TestExpressionsCompile(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(node ast.Node) bool {
			call, ok := node.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "New" {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "lazyre" {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if len(call.Args) != 1 || !ok || lit.Kind != token.STRING {
				t.Errorf("%s: lazyre.New takes a string literal, so this test can check it", fset.Position(call.Pos()))
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
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 50 {
		t.Errorf("found %d lazy expressions, want the filter's dozens: is the test looking in the right place?", n)
	}
}

func TestCompiledOnceForAllCallers(t *testing.T) {
	re := New(`^(\d+)-(\d+)$`)
	var wg sync.WaitGroup
	got := make([]*regexp.Regexp, 8)
	for i := range got {
		wg.Go(func() {
			got[i] = re.Get()
			if m := re.FindStringSubmatch("12-34"); len(m) != 3 || m[2] != "34" {
				t.Errorf("FindStringSubmatch = %q", m)
			}
		})
	}
	wg.Wait()
	for _, r := range got[1:] {
		if r != got[0] {
			t.Fatal("Get compiled the expression more than once")
		}
	}
}
