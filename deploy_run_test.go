package nanobot_test

// The plain `docker run` line of the documentation is the compose service
// by other means: every setting of the service that changes how the
// container runs (user, read-only root, capabilities, limits, stop grace,
// logs) must be on it, with the same value.

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

// runDocs are the files whose `docker run` line follows compose.
var runDocs = []string{"README.md", "deploy/README.md"}

// dockerRunLine returns the `docker run` command of a document, with its
// continuation lines joined, or "" when it has none.
func dockerRunLine(t *testing.T, doc string) string {
	t.Helper()
	lines := strings.Split(readFile(t, doc), "\n")
	for i, l := range lines {
		if !strings.HasPrefix(strings.TrimSpace(l), "docker run ") {
			continue
		}
		var b strings.Builder
		for ; i < len(lines); i++ {
			l := strings.TrimSpace(lines[i])
			cont := strings.HasSuffix(l, "\\")
			b.WriteString(strings.TrimSuffix(l, "\\") + " ")
			if !cont {
				break
			}
		}
		return strings.TrimSpace(b.String())
	}
	return ""
}

// runBoolFlags are the `docker run` flags without a value.
var runBoolFlags = []string{"-d", "--detach", "--init", "--read-only", "--rm", "-i", "-t"}

// runFlags parses `docker run FLAGS IMAGE [ARGS]` into its flags (each
// value in order, "" for a flag without one) and the image.
func runFlags(line string) (map[string][]string, string, error) {
	words := splitWords(line)
	if len(words) < 2 || words[0] != "docker" || words[1] != "run" {
		return nil, "", fmt.Errorf("%q is not a docker run command", line)
	}
	flags := map[string][]string{}
	for i := 2; i < len(words); i++ {
		w := words[i]
		if !strings.HasPrefix(w, "-") {
			return flags, w, nil
		}
		name, value, ok := strings.Cut(w, "=")
		switch {
		case ok:
		case slices.Contains(runBoolFlags, name):
			value = ""
		case i+1 < len(words):
			i++
			value = words[i]
		default:
			return nil, "", fmt.Errorf("%s: no value", name)
		}
		flags[name] = append(flags[name], value)
	}
	return nil, "", fmt.Errorf("%q names no image", line)
}

// composeRun is what `docker run` needs of the compose service.
type composeRun struct {
	composeService `yaml:",inline"`
	Init           bool `yaml:"init"`
	PidsLimit      int  `yaml:"pids_limit"`
	Logging        struct {
		Driver  string            `yaml:"driver"`
		Options map[string]string `yaml:"options"`
	} `yaml:"logging"`
}

// composeOnly are the compose keys a `docker run` line needs no flag for:
// the image itself carries them (command, health check, environment it
// sets) or they only concern compose (how to build, profiles, order).
var composeOnly = []string{"build", "image", "command", "healthcheck", "environment", "profiles", "depends_on"}

// composeRunFlags turns the compose service into the `docker run` flags
// that do the same; unmapped lists the keys it has no flag for.
func composeRunFlags(t *testing.T, raw map[string]yaml.Node, s composeRun) (flags map[string][]string, unmapped []string) {
	t.Helper()
	flags = map[string][]string{}
	add := func(flag string, values ...string) { flags[flag] = append(flags[flag], values...) }
	for _, key := range slices.Sorted(maps.Keys(raw)) {
		switch key {
		case "restart":
			add("--restart", s.Restart)
		case "init":
			if s.Init {
				add("--init", "")
			}
		case "user":
			add("--user", s.User)
		case "env_file":
			add("--env-file", path.Join("deploy", s.EnvFile))
		case "volumes":
			// The compose file's ./data is deploy/data, from the repository root.
			for _, v := range s.Volumes {
				host, ctr, _ := strings.Cut(v, ":")
				if strings.HasPrefix(host, ".") {
					host = "$PWD/" + path.Join("deploy", host)
				}
				add("-v", host+":"+ctr)
			}
		case "read_only":
			if s.ReadOnly {
				add("--read-only", "")
			}
		case "tmpfs":
			add("--tmpfs", s.Tmpfs...)
		case "cap_drop":
			add("--cap-drop", s.CapDrop...)
		case "security_opt":
			add("--security-opt", s.SecurityOpt...)
		case "mem_limit":
			add("--memory", s.MemLimit)
		case "pids_limit":
			add("--pids-limit", fmt.Sprint(s.PidsLimit))
		case "ports":
			add("-p", s.Ports...)
		case "stop_grace_period":
			d, err := time.ParseDuration(s.StopGracePeriod)
			if err != nil || d%time.Second != 0 {
				t.Fatalf("compose stop_grace_period %q: want whole seconds", s.StopGracePeriod)
			}
			add("--stop-timeout", fmt.Sprint(int(d/time.Second)))
		case "logging":
			add("--log-driver", s.Logging.Driver)
			for _, k := range slices.Sorted(maps.Keys(s.Logging.Options)) {
				add("--log-opt", k+"="+s.Logging.Options[k])
			}
		default:
			if !slices.Contains(composeOnly, key) {
				unmapped = append(unmapped, key)
			}
		}
	}
	return flags, unmapped
}

func TestDockerRunMatchesCompose(t *testing.T) {
	var f struct {
		Services map[string]map[string]yaml.Node `yaml:"services"`
	}
	src := readFile(t, "deploy/docker-compose.yml")
	if err := yaml.Unmarshal([]byte(src), &f); err != nil {
		t.Fatalf("deploy/docker-compose.yml: %v", err)
	}
	var typed struct {
		Services map[string]composeRun `yaml:"services"`
	}
	if err := yaml.Unmarshal([]byte(src), &typed); err != nil {
		t.Fatalf("deploy/docker-compose.yml: %v", err)
	}
	s := typed.Services["nanobot"]
	want, unmapped := composeRunFlags(t, f.Services["nanobot"], s)
	if len(unmapped) > 0 {
		t.Errorf("compose sets %q, which the docker run line has no flag for here: map it in composeRunFlags (and add the flag to the documentation)", unmapped)
	}
	// What compose says for the keys the image carries, the image says too.
	named := dockerStages(t)
	if !slices.Equal(s.Command, jsonArray(t, "CMD", find(named[s.Build.Target], "CMD")[0])) {
		t.Errorf("compose command %q differs from the image's CMD, which docker run uses", s.Command)
	}
	env := expandArgs(named, s.Build.Target, find(named[s.Build.Target], "ENV"))
	for k, v := range s.Environment {
		if !slices.ContainsFunc(env, func(e string) bool { return slices.Contains(strings.Fields(e), k+"="+v) }) {
			t.Errorf("compose sets %s=%s, which the image does not: docker run needs -e for it", k, v)
		}
	}

	found := 0
	for _, doc := range runDocs {
		line := dockerRunLine(t, doc)
		if line == "" {
			continue
		}
		found++
		got, image, err := runFlags(line)
		if err != nil {
			t.Errorf("%s: %v", doc, err)
			continue
		}
		delete(got, "-d")
		delete(got, "--name")
		for _, l := range [][]string{got["--tmpfs"], got["--cap-drop"], got["--security-opt"], got["-p"], got["--log-opt"]} {
			slices.Sort(l)
		}
		for _, l := range [][]string{want["--tmpfs"], want["--cap-drop"], want["--security-opt"], want["-p"], want["--log-opt"]} {
			slices.Sort(l)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: docker run flags differ from compose's service (-want +got):\n%s", doc, diff)
		}
		if tag, _, _ := strings.Cut(image, ":"); tag != "nanobot" {
			t.Errorf("%s: docker run starts image %q, want the nanobot image the build line tags", doc, image)
		}
	}
	if found == 0 {
		t.Errorf("none of %q has a docker run line", runDocs)
	}
}

func TestRunFlags(t *testing.T) {
	got, image, err := runFlags(`docker run -d --init --name x --memory=1g -v "$PWD/a b:/data" --cap-drop ALL --read-only img gateway`)
	want := map[string][]string{"-d": {""}, "--init": {""}, "--name": {"x"}, "--memory": {"1g"}, "-v": {"$PWD/a b:/data"},
		"--cap-drop": {"ALL"}, "--read-only": {""}}
	if err != nil || image != "img" || !cmp.Equal(got, want) {
		t.Errorf("runFlags = %v, %q, %v; want %v, img", got, image, err, want)
	}
	if _, _, err := runFlags("docker run --memory"); err == nil {
		t.Error("runFlags of a flag without its value: no error")
	}
}

// Podman builds OCI images unless told otherwise, and the OCI format has no
// HEALTHCHECK: every podman build the documentation shows asks for the
// Docker format, and the documentation says why.
func TestPodmanKeepsHealthcheck(t *testing.T) {
	shown := 0
	for _, doc := range []string{"Dockerfile", "deploy/README.md", "README.md"} {
		for _, l := range strings.Split(readFile(t, doc), "\n") {
			if !strings.Contains(l, "podman build") {
				continue
			}
			shown++
			if !strings.Contains(l, "--format docker") {
				t.Errorf("%s: %q builds without --format docker, which drops the HEALTHCHECK", doc, strings.TrimSpace(l))
			}
		}
	}
	if shown == 0 {
		t.Error("no podman build line in the documentation: show one with --format docker")
	}
	if !strings.Contains(readFile(t, "Dockerfile"), "--format docker") {
		t.Error("Dockerfile: its header does not say that Podman needs --format docker to keep the HEALTHCHECK")
	}
}
