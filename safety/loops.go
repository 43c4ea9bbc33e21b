package safety

import (
	"strconv"

	"mvdan.cc/sh/v3/syntax"
)

// A loop need not be endless to exhaust the machine: a hundred thousand
// background processes or a hundred million files do it too. The number of
// iterations is read from the loop's header when it is spelled out
// ($(seq 1 N), {1..N}, ((i=0; i<N; i++))).

const (
	maxLoopSpawns = 1000    // background processes a loop may start
	maxLoopFiles  = 1000000 // files a loop may create
)

// countedLoop refuses a for loop whose iteration count is known and large
// while its body starts background processes or creates files.
func (j *judge) countedLoop(owner int, c *syntax.ForClause) {
	n, ok := loopCount(c.Loop)
	if !ok || n < maxLoopSpawns {
		return
	}
	spawns, files := false, false
	for _, st := range c.Do {
		syntax.Walk(st, func(node syntax.Node) bool {
			switch x := node.(type) {
			case *syntax.Stmt:
				spawns = spawns || x.Background
				for _, r := range x.Redirs {
					if r.Word != nil && r.Word.Lit() == "" && (r.Op == syntax.RdrOut || r.Op == syntax.AppOut || r.Op == syntax.RdrAll || r.Op == syntax.AppAll) {
						files = true // a name built from the loop variable
					}
				}
			case *syntax.CallExpr:
				if len(x.Args) > 0 {
					switch baseName(x.Args[0].Lit()) {
					case "touch", "mkdir", "fallocate", "truncate", "dd", "cp", "ln", "mkfifo", "mktemp", "split", "install", "tee":
						files = true
					}
				}
			}
			return true
		})
	}
	switch {
	case spawns:
		j.add(owner, Deny, "resource_exhaustion", "loop starts "+strconv.FormatInt(n, 10)+" background processes")
	case files && n >= maxLoopFiles:
		j.add(owner, Deny, "resource_exhaustion", "loop creates "+strconv.FormatInt(n, 10)+" files")
	}
}

// loopCount returns the number of iterations of a for loop when its header
// spells it out.
func loopCount(l syntax.Loop) (int64, bool) {
	switch l := l.(type) {
	case *syntax.WordIter:
		if len(l.Items) != 1 {
			return int64(len(l.Items)), true
		}
		w := l.Items[0]
		if len(w.Parts) == 1 {
			if cs, ok := w.Parts[0].(*syntax.CmdSubst); ok {
				return seqCount(cs.Stmts)
			}
		}
		if n, ok := braceRangeCount(w); ok {
			return n, true
		}
		return int64(len(braceWords(w))), true
	case *syntax.CStyleLoop:
		b, ok := l.Cond.(*syntax.BinaryArithm)
		if !ok {
			return 0, false
		}
		switch b.Op {
		case syntax.Lss, syntax.Leq, syntax.Neq:
			if n, ok := evalArith(b.Y); ok {
				return n, true
			}
		}
	}
	return 0, false
}

// seqCount is the number of lines $(seq [first [step]] last) prints.
func seqCount(stmts []*syntax.Stmt) (int64, bool) {
	if len(stmts) != 1 {
		return 0, false
	}
	ce, ok := stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(ce.Args) < 2 || len(ce.Args) > 4 || ce.Args[0].Lit() != "seq" {
		return 0, false
	}
	var args []string
	for _, w := range ce.Args[1:] {
		args = append(args, w.Lit())
	}
	return seqNumbers(args)
}

// seqLines is the number of lines seq prints for these arguments, or 0
// when it is not known.
func seqLines(argv []arg) int64 {
	n, _ := seqNumbers(argTexts(argv))
	return n
}

// seqNumbers counts the lines of seq [first [step]] last.
func seqNumbers(args []string) (int64, bool) {
	if len(args) == 0 || len(args) > 3 {
		return 0, false
	}
	var nums []int64
	for _, w := range args {
		n, err := strconv.ParseInt(w, 10, 64)
		if err != nil {
			return 0, false
		}
		nums = append(nums, n)
	}
	first, step, last := int64(1), int64(1), nums[len(nums)-1]
	if len(nums) >= 2 {
		first = nums[0]
	}
	if len(nums) == 3 {
		step = nums[1]
	}
	if step <= 0 || last < first {
		return 0, true
	}
	return (last-first)/step + 1, true
}

// braceRangeCount is the size of a {a..b} range, which braceWords does not
// expand past its limit.
func braceRangeCount(w *syntax.Word) (int64, bool) {
	cp := &syntax.Word{Parts: append([]syntax.WordPart(nil), w.Parts...)}
	if !syntax.SplitBraces(cp) {
		return 0, false
	}
	for _, p := range cp.Parts {
		be, ok := p.(*syntax.BraceExp)
		if !ok || !be.Sequence || len(be.Elems) < 2 {
			continue
		}
		a, err1 := strconv.ParseInt(be.Elems[0].Lit(), 10, 64)
		b, err2 := strconv.ParseInt(be.Elems[1].Lit(), 10, 64)
		if err1 != nil || err2 != nil {
			return 0, false
		}
		if b < a {
			a, b = b, a
		}
		return b - a + 1, true
	}
	return 0, false
}

// maxBenchWorkers is the number of busy workers a benchmark may start; a
// few hundred saturate any machine this runs on.
const maxBenchWorkers = 32

// benchWorkers refuses a benchmark (openssl speed -multi, sysbench
// --threads) asked to start more CPU-bound workers than maxBenchWorkers.
func (c *call) benchWorkers(names ...string) {
	for _, v := range c.optValues(names...) {
		if n, err := strconv.Atoi(v.val); err == nil && n > maxBenchWorkers {
			c.deny("resource_exhaustion", c.name+" starts "+v.val+" busy workers")
			return
		}
	}
}

// countedXargs refuses xargs fed a counted stream (seq 1 N) that would
// start more than maxLoopSpawns commands at once or create more than
// maxLoopFiles files, like the loops above.
func (c *call) countedXargs(opts []opt, inner []arg) {
	var n int64
	for _, p := range c.in {
		n = max(n, p.lines)
	}
	if n < maxLoopSpawns {
		return
	}
	if p, ok := hasOpt(opts, "P", "max-procs"); ok {
		if k, err := strconv.Atoi(p.val); err == nil && (k == 0 || k >= maxLoopSpawns) {
			c.deny("resource_exhaustion", "xargs starts up to "+strconv.FormatInt(n, 10)+" commands at once")
			return
		}
	}
	if len(inner) > 0 && n >= maxLoopFiles {
		switch baseName(inner[0].val) {
		case "touch", "mkdir", "fallocate", "truncate", "dd", "cp", "ln", "mkfifo", "mktemp", "split", "install", "tee":
			c.deny("resource_exhaustion", "xargs creates "+strconv.FormatInt(n, 10)+" files")
		}
	}
}
