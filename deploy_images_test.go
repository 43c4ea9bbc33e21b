package nanobot_test

// The Dockerfile's two runtime targets: slim (distroless) and full (Debian
// slim with tools). Docker cannot run in CI, so these checks hold both to the
// same contract statically: user, volume, paths, health check, entry point,
// the glibc of the build stage, and for full the tools it promises.

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// fullTools are the packages the full image promises (deploy/README.md).
var fullTools = []string{"git", "curl", "python3", "jq", "ripgrep", "sqlite3", "ca-certificates", "tzdata"}

// dockerStages returns the Dockerfile's stages by their AS name, plus "" for
// the global ARGs before the first FROM.
func dockerStages(t *testing.T) map[string][]instruction {
	t.Helper()
	out := map[string][]instruction{}
	for i, st := range stages(parseDockerfile(readFile(t, "Dockerfile"))) {
		if i == 0 {
			out[""] = st
			continue
		}
		words := strings.Fields(st[0].args)
		if len(words) != 3 || !strings.EqualFold(words[1], "AS") {
			t.Fatalf("Dockerfile: FROM %s: every stage needs a name (FROM image AS name)", st[0].args)
		}
		out[words[2]] = st
	}
	return out
}

// stageImage is the base image of a stage, with a global ARG's default
// substituted.
func stageImage(named map[string][]instruction, stage string) string {
	image := strings.Fields(named[stage][0].args)[0]
	if strings.HasPrefix(image, "${") {
		name := strings.TrimSuffix(strings.TrimPrefix(image, "${"), "}")
		for _, a := range find(named[""], "ARG") {
			if v, ok := strings.CutPrefix(a, name+"="); ok {
				image = v
			}
		}
	}
	return image
}

// stageArgs are the build args a stage sees, with their defaults: a global
// ARG's default, unless the stage's own ARG sets another.
func stageArgs(named map[string][]instruction, stage string) map[string]string {
	global := map[string]string{}
	for _, a := range find(named[""], "ARG") {
		k, v, _ := strings.Cut(a, "=")
		global[k] = v
	}
	args := map[string]string{}
	for _, a := range find(named[stage], "ARG") {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			v = global[k]
		}
		args[k] = v
	}
	return args
}

// expandArgs substitutes the stage's build args ($NAME, ${NAME}) in each of
// ss, as the builder does with their defaults.
func expandArgs(named map[string][]instruction, stage string, ss []string) []string {
	args := stageArgs(named, stage)
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = os.Expand(s, func(k string) string { return args[k] })
	}
	return out
}

// aptPackages are the packages of the `apt-get install` in a RUN line.
func aptPackages(run string) []string {
	_, rest, ok := strings.Cut(run, "apt-get install")
	if !ok {
		return nil
	}
	rest, _, _ = strings.Cut(rest, "&&")
	var pkgs []string
	for _, w := range strings.Fields(rest) {
		if !strings.HasPrefix(w, "-") {
			pkgs = append(pkgs, w)
		}
	}
	return pkgs
}

func TestDockerfile(t *testing.T) {
	src := readFile(t, "Dockerfile")
	named := dockerStages(t)
	build, slim, full := named["build"], named["slim"], named["full"]
	if build == nil || slim == nil || full == nil {
		t.Fatalf("Dockerfile stages %v, want build, slim and full", slices.Sorted(maps.Keys(named)))
	}

	// The build stage.
	if from := stageImage(named, "build"); !strings.HasPrefix(from, "golang:") || !strings.Contains(from, "bookworm") {
		t.Errorf("build stage FROM %q, want golang:*-bookworm (glibc matching the runtimes)", from)
	}
	if !slices.Contains(find(build, "ENV"), "CGO_ENABLED=1") {
		t.Error("build stage does not set ENV CGO_ENABLED=1 (go-sqlite3 needs cgo)")
	}
	if !slices.Contains(find(build, "ENV"), releaseCFLAGS) {
		t.Errorf("build stage does not set ENV %s, the C flags of release builds", releaseCFLAGS)
	}
	if line := dockerBuildLine(t, src); !strings.Contains(line, " -o /out/nanobot ") {
		t.Errorf("build line %q does not write /out/nanobot, which the runtime stages copy", line)
	}

	// Plain `docker build` builds the last stage: the image with tools.
	all := stages(parseDockerfile(src))
	if last := strings.Fields(all[len(all)-1][0].args); last[len(last)-1] != "full" {
		t.Errorf("the last stage is %q; make it full, the default image", last[len(last)-1])
	}

	// Both runtimes: Debian 12 like the build stage (the cgo binary links
	// its glibc), non-root, the same volume, paths and health check.
	if img := stageImage(named, "slim"); !strings.HasPrefix(img, "gcr.io/distroless/base-debian12:") || !strings.Contains(img, "nonroot") {
		t.Errorf("slim image %q, want distroless base-debian12 (glibc), nonroot", img)
	}
	if img, _, _ := strings.Cut(stageImage(named, "full"), "@sha256:"); img != "debian:bookworm-slim" {
		t.Errorf("full image %q, want debian:bookworm-slim", img)
	}
	for _, target := range []string{"slim", "full"} {
		checkRuntimeStage(t, target, named, named[target])
	}
	for _, cmd := range []string{"HEALTHCHECK", "ENTRYPOINT", "CMD", "VOLUME", "USER", "WORKDIR", "EXPOSE", "COPY"} {
		if a, b := find(slim, cmd), find(full, cmd); !slices.Equal(a, b) {
			t.Errorf("%s differs between the targets: slim %q, full %q", cmd, a, b)
		}
	}

	// full: the promised tools, installed lean, and the runtime user the
	// distroless image has built in.
	run := strings.Join(expandArgs(named, "full", find(full, "RUN")), " && ")
	pkgs := aptPackages(run)
	for _, tool := range fullTools {
		if !slices.Contains(pkgs, tool) {
			t.Errorf("full image does not install %s (apt-get install %q)", tool, pkgs)
		}
	}
	for _, want := range []string{"--no-install-recommends", "rm -rf /var/lib/apt/lists/*",
		"groupadd --gid " + runtimeUID + " ", "useradd --uid " + runtimeUID + " --gid " + runtimeUID + " "} {
		if !strings.Contains(run, want) {
			t.Errorf("full image RUN lacks %q", want)
		}
	}
	// With a read-only root, $HOME must be writable: /tmp, a tmpfs in the
	// compose file and an emptyDir in the manifest (checked there).
	if !slices.ContainsFunc(find(full, "ENV"), func(e string) bool { return slices.Contains(strings.Fields(e), "HOME=/tmp") }) {
		t.Errorf("full image ENV %q: want HOME=/tmp, writable under a read-only root", find(full, "ENV"))
	}

	for _, in := range parseDockerfile(src) {
		if (in.cmd == "ENV" || in.cmd == "ARG") && secretName.MatchString(in.args) {
			t.Errorf("Dockerfile %s %s: secrets must come from the runtime environment, not the image", in.cmd, in.args)
		}
		if (in.cmd == "COPY" || in.cmd == "ADD") && strings.Contains(in.args, ".env") {
			t.Errorf("Dockerfile %s %s copies an env file into the image", in.cmd, in.args)
		}
	}
}

func checkRuntimeStage(t *testing.T, target string, named map[string][]instruction, st []instruction) {
	t.Helper()
	// The user comes from build args, so a build can choose another.
	if user := find(st, "USER"); !slices.Equal(user, []string{"${" + uidArg + "}:${" + gidArg + "}"}) {
		t.Errorf("%s: USER %q, want ${%s}:${%s} (overridable with --build-arg)", target, user, uidArg, gidArg)
	}
	checks := []struct {
		cmd, want string
	}{
		{"USER", runtimeUID + ":" + runtimeUID},
		{"WORKDIR", dataDir},
		{"VOLUME", `["` + dataDir + `"]`},
		{"ENV", "NANOBOT_CONFIG=" + dockerConfig},
		{"EXPOSE", adminPort},
		{"COPY", "--from=build /out/nanobot /usr/local/bin/nanobot"},
		{"COPY", "--from=build --chown=" + runtimeUID + ":" + runtimeUID + " /out/data " + dataDir},
	}
	for _, c := range checks {
		if have := expandArgs(named, target, find(st, c.cmd)); !slices.Contains(have, c.want) {
			t.Errorf("%s: no %s %s (have %q)", target, c.cmd, c.want, have)
		}
	}
	if ep := find(st, "ENTRYPOINT"); len(ep) != 1 || !slices.Equal(jsonArray(t, "ENTRYPOINT", ep[0]), []string{"nanobot"}) {
		t.Errorf("%s: ENTRYPOINT = %q, want [\"nanobot\"]", target, ep)
	}
	if cmd := find(st, "CMD"); len(cmd) != 1 || !slices.Equal(jsonArray(t, "CMD", cmd[0]), []string{"gateway"}) {
		t.Errorf("%s: CMD = %q, want [\"gateway\"]", target, cmd)
	}
	hc := find(st, "HEALTHCHECK")
	if len(hc) != 1 {
		t.Fatalf("%s: %d HEALTHCHECKs, want 1", target, len(hc))
	}
	_, probe, ok := strings.Cut(hc[0], " CMD ")
	if !ok || !slices.Equal(jsonArray(t, "HEALTHCHECK CMD", probe), []string{"nanobot", "health"}) {
		t.Errorf("%s: HEALTHCHECK %q, want CMD [\"nanobot\", \"health\"]", target, hc[0])
	}
	// USER comes after everything that needs root.
	userAt := slices.IndexFunc(st, func(in instruction) bool { return in.cmd == "USER" })
	for _, in := range st[userAt+1:] {
		if in.cmd == "RUN" {
			t.Errorf("%s: RUN %s after USER runs as the unprivileged user; move it before", target, in.args)
		}
	}
}

func TestAptPackages(t *testing.T) {
	got := aptPackages("apt-get update && apt-get install -y --no-install-recommends git curl && rm -rf x")
	if !slices.Equal(got, []string{"git", "curl"}) {
		t.Errorf("aptPackages = %q", got)
	}
}

// The build args that choose the images' user.
const (
	uidArg = "NANOBOT_UID"
	gidArg = "NANOBOT_GID"
)

// idMention finds a uid or gid the prose or a comment states: "uid 18790",
// "uid/gid 18790", "chown -R 18790:18790", "runs as 18790".
var idMention = regexp.MustCompile(`\b(?:uid(?:/gid)?|gid|chown -R|runs as) (\d+)(?::(\d+))?`)

// The images' user is one uid/gid everywhere: the Dockerfile's build args,
// compose (service user and build args, Litestream too, which shares the
// volume), the manifest and the documentation.
func TestRuntimeUserAgrees(t *testing.T) {
	named := dockerStages(t)
	for _, stage := range []string{"slim", "full"} {
		args := stageArgs(named, stage)
		if args[uidArg] != runtimeUID || args[gidArg] != runtimeUID {
			t.Errorf("Dockerfile %s: ARG %s=%q %s=%q, want both %s", stage, uidArg, args[uidArg], gidArg, args[gidArg], runtimeUID)
		}
	}
	services := composeServices(t)
	for _, name := range []string{"nanobot", "litestream"} {
		if u := services[name].User; u != runtimeUID+":"+runtimeUID {
			t.Errorf("compose %s: user %q, want %s:%s", name, u, runtimeUID, runtimeUID)
		}
	}
	if a := services["nanobot"].Build.Args; a[uidArg] != runtimeUID || a[gidArg] != runtimeUID {
		t.Errorf("compose build args %s=%q %s=%q, want both %s like user:", uidArg, a[uidArg], gidArg, a[gidArg], runtimeUID)
	}
	for _, f := range []string{"Dockerfile", "deploy/README.md", "deploy/docker-compose.yml", "deploy/kubernetes.yaml"} {
		for _, m := range idMention.FindAllStringSubmatch(readFile(t, f), -1) {
			if m[1] != runtimeUID || m[2] != "" && m[2] != runtimeUID {
				t.Errorf("%s: %q, but the images run as %s:%s", f, m[0], runtimeUID, runtimeUID)
			}
		}
	}
	if runtimeUID == "65532" {
		t.Error("the images run as 65532, distroless \"nonroot\": shared with other containers, whose processes count against RLIMIT_NPROC")
	}
}
