//go:build bench

// Command sh is the baseline plus mvdan.cc/sh/v3 as safety uses it: bash
// parsed into a syntax tree, walked node by node, brace expansion without
// running anything, and statements printed back minified.
package main

import (
	"fmt"
	"os"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/nanobot-go/nanobot/bench/depcost/internal/base"
)

func main() {
	_, log, stop := base.Run()
	defer stop()
	src := strings.Join(os.Args[1:], " ")
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		log.Error("parse", "err", err)
		return
	}
	printer := syntax.NewPrinter(syntax.Minify(true))
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CallExpr:
			for _, w := range n.Args {
				cp := &syntax.Word{Parts: append([]syntax.WordPart(nil), w.Parts...)}
				if syntax.SplitBraces(cp) {
					for bw, err := range expand.BracesSeq(nil, cp) {
						if err == nil {
							fmt.Println(bw.Lit())
						}
					}
				}
			}
		case *syntax.Redirect:
			fmt.Println(n.Op == syntax.RdrOut || n.Op == syntax.AppOut)
		case *syntax.Stmt:
			var sb strings.Builder
			_ = printer.Print(&sb, n)
			fmt.Println(sb.String(), syntax.IsKeyword(sb.String()))
		}
		return true
	})
}
