package safety

import (
	"testing"
)

// BenchmarkCheck judges a mix of corpus commands, one per iteration.
func BenchmarkCheck(b *testing.B) {
	p := corpusPolicy(b)
	rows := loadCorpus(b)
	cmds := make([]string, len(rows))
	for i, r := range rows {
		cmds[i] = r.command
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		p.Check(cmds[i%len(cmds)])
		i++
	}
}

// BenchmarkCheckTypical judges one ordinary command.
func BenchmarkCheckTypical(b *testing.B) {
	p := corpusPolicy(b)
	b.ReportAllocs()
	for b.Loop() {
		p.Check("cd src && go test ./... 2>&1 | tail -n 20")
	}
}
