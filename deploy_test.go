package nanobot_test

// These tests keep the deployment files (Dockerfile, deploy/) consistent with
// each other and with the code, since Docker and Kubernetes cannot run in CI:
// build flags, port, paths, user, health command, exit status, grace periods,
// and no secret values anywhere.

import (
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/nanobot-go/nanobot/admin"
	"github.com/nanobot-go/nanobot/config"
)

const (
	adminPort    = "18790" // the port of gateway.listen's default
	runtimeUID   = "18790" // and gid: nanobot's own (not distroless "nonroot", 65532, which other images share)
	dataDir      = "/data" // the container volume
	exitConfig   = "78"    // EX_CONFIG: invalid configuration, never restarted
	dockerConfig = "/data/config.yaml"
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return string(b)
}

// --- Dockerfile ---

type instruction struct {
	cmd  string // upper case: FROM, RUN, ...
	args string
}

// parseDockerfile returns the instructions, with continuation lines joined
// and comments dropped.
func parseDockerfile(src string) []instruction {
	var out []instruction
	var cur strings.Builder
	for _, line := range strings.Split(src, "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

// stages splits instructions at each FROM; instructions before the first
// FROM (global ARGs) form stage 0.
func stages(ins []instruction) [][]instruction {
	out := [][]instruction{nil}
	for _, in := range ins {
		if in.cmd == "FROM" {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], in)
	}
	return out
}

func find(ins []instruction, cmd string) []string {
	var out []string
	for _, in := range ins {
		if in.cmd == cmd {
			out = append(out, in.args)
		}
	}
	return out
}

func jsonArray(t *testing.T, what, s string) []string {
	t.Helper()
	var v []string
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s %s: not an exec-form JSON array: %v", what, s, err)
	}
	return v
}

// splitWords splits a shell command line into words, removing quotes. It is
// enough for the one-line `go build` commands compared here.
func splitWords(s string) []string {
	var words []string
	var w strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// stampedVars are the variables of package main the builds stamp with
// -ldflags -X; their values differ between builds (a tag, a commit, "ci").
var stampedVars = []string{"commit", "version"}

// canonicalStamps replaces the value of each stamped variable in an
// -ldflags value by the variable's name in capitals, whatever expression
// yields it (values such as $(git describe --tags) contain spaces: a value
// ends at the next -X).
func canonicalStamps(ldflags string) string {
	parts := strings.Split(ldflags, " -X ")
	for i, p := range parts[1:] {
		for _, v := range stampedVars {
			if strings.HasPrefix(p, "main."+v+"=") {
				parts[i+1] = "main." + v + "=" + strings.ToUpper(v)
			}
		}
	}
	return strings.Join(parts, " -X ")
}

// buildFlags extracts the flags of the `go build` in line, in a canonical
// form: "-flag=value", and whatever values stamp main.version and main.commit.
func buildFlags(line string) ([]string, bool) {
	_, rest, ok := strings.Cut(line, "go build ")
	if !ok {
		return nil, false
	}
	words := splitWords(rest)
	var flags []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		if w == "-o" || !strings.HasPrefix(w, "-") {
			break
		}
		w = "-" + strings.TrimLeft(w, "-")
		if !strings.Contains(w, "=") && slices.Contains([]string{"-tags", "-ldflags", "-gcflags"}, w) && i+1 < len(words) {
			w += "=" + words[i+1]
			i++
		}
		if v, ok := strings.CutPrefix(w, "-ldflags="); ok {
			w = "-ldflags=" + canonicalStamps(v)
		}
		flags = append(flags, w)
	}
	return flags, true
}

// releaseCFLAGS is how release builds compile SQLite's C code: the
// Dockerfile's build stage, .ci/run and the binary the kill tests build
// (cmd/nanobot/crash_test.go) all use it.
const releaseCFLAGS = "CGO_CFLAGS=-Os"

// dockerBuildLine returns the RUN line after the "build-flags:" marker.
func dockerBuildLine(t *testing.T, src string) string {
	t.Helper()
	lines := strings.Split(src, "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "# build-flags:") && i+1 < len(lines) {
			return strings.TrimSpace(lines[i+1])
		}
	}
	t.Fatal(`Dockerfile: no "# build-flags:" marker before the go build line`)
	return ""
}

func TestDockerfileBuildFlagsMatchCI(t *testing.T) {
	line := dockerBuildLine(t, readFile(t, "Dockerfile"))
	want, ok := buildFlags(line)
	if !ok || !strings.HasPrefix(line, "RUN go build ") || !strings.HasSuffix(line, " ./cmd/nanobot") {
		t.Fatalf("Dockerfile build line = %q, want RUN go build ... ./cmd/nanobot", line)
	}
	for _, f := range []string{"-trimpath", "-tags=sqlite_fts5", "-ldflags=-s -w -X main.commit=COMMIT -X main.version=VERSION"} {
		if !slices.Contains(want, f) {
			t.Errorf("Dockerfile build flags %q lack %q", want, f)
		}
	}
	// The stamps come from the build args, which the build stage declares.
	build := dockerStages(t)["build"]
	for arg, stamp := range map[string]string{"VERSION": "-X main.version=${VERSION}", "VCS_REF": "-X main.commit=${VCS_REF}"} {
		if !strings.Contains(line, stamp) {
			t.Errorf("Dockerfile build line %q lacks %q", line, stamp)
		}
		if !slices.ContainsFunc(find(build, "ARG"), func(a string) bool { return a == arg || strings.HasPrefix(a, arg+"=") }) {
			t.Errorf("Dockerfile build stage declares no ARG %s, which the build line stamps", arg)
		}
	}
	if arg := composeServices(t)["nanobot"].Build.Args["VCS_REF"]; !strings.Contains(arg, "${") {
		t.Errorf("compose build arg VCS_REF = %q, want it from the environment (the commit to stamp)", arg)
	}

	ci, err := os.ReadFile(filepath.Join(".ci", "run"))
	if os.IsNotExist(err) {
		t.Skip(".ci/run does not exist")
	}
	if err != nil {
		t.Fatal(err)
	}
	src := strings.ReplaceAll(string(ci), "\\\n", " ")
	found := 0
	for _, l := range strings.Split(src, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "#") || !strings.Contains(l, "go build") || !strings.Contains(l, "./cmd/nanobot") {
			continue
		}
		found++
		if !strings.Contains(l, releaseCFLAGS+" ") {
			t.Errorf(".ci/run builds without %s: %q", releaseCFLAGS, l)
		}
		got, _ := buildFlags(l)
		if !slices.Equal(got, want) {
			t.Errorf(".ci/run builds with %q, Dockerfile with %q", got, want)
		}
	}
	if found == 0 {
		t.Error(".ci/run has no `go build ... ./cmd/nanobot` line: CI must build the binary as the Dockerfile does")
	}
	if crash := readFile(t, filepath.Join("cmd", "nanobot", "crash_test.go")); !strings.Contains(crash, `releaseCFLAGS = "`+strings.TrimPrefix(releaseCFLAGS, "CGO_CFLAGS=")+`"`) {
		t.Errorf("cmd/nanobot/crash_test.go builds the daemon with other C flags than %s, so it cannot reuse the release build's cache", releaseCFLAGS)
	}
}

func TestBuildFlagsCanonical(t *testing.T) {
	tests := []struct{ line, want string }{
		{`go build -trimpath -tags sqlite_fts5 -ldflags="-s -w -X main.version=${VERSION}" -o /out/nanobot ./cmd/nanobot`,
			"-trimpath|-tags=sqlite_fts5|-ldflags=-s -w -X main.version=VERSION"},
		{`CGO_ENABLED=1 go build -trimpath -tags=sqlite_fts5 -ldflags '-s -w -X main.version=$(git describe)' -o bin/nanobot ./cmd/nanobot`,
			"-trimpath|-tags=sqlite_fts5|-ldflags=-s -w -X main.version=VERSION"},
		{`go build --trimpath ./cmd/nanobot`, "-trimpath"},
		{`go build -ldflags="-s -w -X main.commit=$(git rev-parse HEAD) -X main.version=$(git describe --tags --always)" ./cmd/nanobot`,
			"-ldflags=-s -w -X main.commit=COMMIT -X main.version=VERSION"},
		{`go build -ldflags="-s -w -X main.commit=${VCS_REF} -X main.version=${VERSION}" ./cmd/nanobot`,
			"-ldflags=-s -w -X main.commit=COMMIT -X main.version=VERSION"},
	}
	for _, tt := range tests {
		got, ok := buildFlags(tt.line)
		if !ok || strings.Join(got, "|") != tt.want {
			t.Errorf("buildFlags(%q) = %q, want %q", tt.line, strings.Join(got, "|"), tt.want)
		}
	}
}

func TestDockerignore(t *testing.T) {
	lines := strings.Split(readFile(t, ".dockerignore"), "\n")
	for _, want := range []string{".git", "data/", "workspace/", "*.db", ".env", "**/.env", "litestream.env", "**/litestream.env"} {
		if !slices.Contains(lines, want) {
			t.Errorf(".dockerignore does not exclude %q", want)
		}
	}
}

// --- docker compose ---

type composeService struct {
	Build struct {
		Context    string            `yaml:"context"`
		Dockerfile string            `yaml:"dockerfile"`
		Target     string            `yaml:"target"`
		Args       map[string]string `yaml:"args"`
	} `yaml:"build"`
	Image       string            `yaml:"image"`
	Profiles    []string          `yaml:"profiles"`
	Command     []string          `yaml:"command"`
	Restart     string            `yaml:"restart"`
	User        string            `yaml:"user"`
	EnvFile     string            `yaml:"env_file"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
	ReadOnly    bool              `yaml:"read_only"`
	Tmpfs       []string          `yaml:"tmpfs"`
	CapDrop     []string          `yaml:"cap_drop"`
	SecurityOpt []string          `yaml:"security_opt"`
	MemLimit    string            `yaml:"mem_limit"`
	Ports       []string          `yaml:"ports"`
	Healthcheck struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	StopGracePeriod string   `yaml:"stop_grace_period"`
	DependsOn       []string `yaml:"depends_on"`
}

func composeServices(t *testing.T) map[string]composeService {
	t.Helper()
	var f struct {
		Services map[string]composeService `yaml:"services"`
	}
	if err := yaml.Unmarshal([]byte(readFile(t, "deploy/docker-compose.yml")), &f); err != nil {
		t.Fatalf("deploy/docker-compose.yml: %v", err)
	}
	return f.Services
}

func TestCompose(t *testing.T) {
	s, ok := composeServices(t)["nanobot"]
	if !ok {
		t.Fatal("deploy/docker-compose.yml has no nanobot service")
	}
	if _, err := os.Stat(filepath.Join("deploy", s.Build.Context, s.Build.Dockerfile)); err != nil {
		t.Errorf("compose build context %q / %q: %v", s.Build.Context, s.Build.Dockerfile, err)
	}
	checks := []struct {
		name string
		ok   bool
	}{
		{"restart: unless-stopped", s.Restart == "unless-stopped"},
		{"command: [gateway]", slices.Equal(s.Command, []string{"gateway"})},
		{"user: " + runtimeUID + ":" + runtimeUID, s.User == runtimeUID+":"+runtimeUID},
		{"env_file: .env", s.EnvFile == ".env"},
		{"NANOBOT_CONFIG=" + dockerConfig, s.Environment["NANOBOT_CONFIG"] == dockerConfig},
		{"a volume on " + dataDir, slices.ContainsFunc(s.Volumes, func(v string) bool { return strings.HasSuffix(v, ":"+dataDir) })},
		{"read_only: true", s.ReadOnly},
		{"tmpfs /tmp", slices.Contains(s.Tmpfs, "/tmp")},
		{"cap_drop: [ALL]", slices.Equal(s.CapDrop, []string{"ALL"})},
		{"no-new-privileges", slices.Contains(s.SecurityOpt, "no-new-privileges:true")},
		{"mem_limit", s.MemLimit != ""},
		{"port on the host's loopback only", slices.Equal(s.Ports, []string{"127.0.0.1:" + adminPort + ":" + adminPort})},
		{"healthcheck nanobot health", slices.Equal(s.Healthcheck.Test, []string{"CMD", "nanobot", "health"})},
		{"build target full (the image with tools)", s.Build.Target == "full"},
		{"no profile: it always runs", len(s.Profiles) == 0},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("compose service nanobot: want %s", c.name)
		}
	}
	// Switching images is one line: the target line, which names both.
	targetLines := 0
	for _, l := range strings.Split(readFile(t, "deploy/docker-compose.yml"), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "target:") {
			targetLines++
			if !strings.Contains(l, "slim") {
				t.Errorf("compose target line %q does not say how to switch to slim", strings.TrimSpace(l))
			}
		}
	}
	if targetLines != 1 {
		t.Errorf("compose has %d target lines, want the one line that switches images", targetLines)
	}
	if _, ok := dockerStages(t)[s.Build.Target]; !ok {
		t.Errorf("compose builds target %q, which the Dockerfile lacks", s.Build.Target)
	}
	grace, err := time.ParseDuration(s.StopGracePeriod)
	if err != nil || grace <= shutdownTimeout(t) {
		t.Errorf("compose stop_grace_period %q, want longer than agent.shutdown_timeout %v", s.StopGracePeriod, shutdownTimeout(t))
	}
	for k := range s.Environment {
		if secretName.MatchString(k + "=") {
			t.Errorf("compose environment sets %s: secrets belong in .env", k)
		}
	}
}

// --- systemd ---

func parseUnit(src string) map[string]map[string][]string {
	out := map[string]map[string][]string{}
	section := ""
	for _, line := range strings.Split(src, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
			out[section] = map[string][]string{}
		default:
			k, v, _ := strings.Cut(line, "=")
			out[section][strings.TrimSpace(k)] = append(out[section][strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	return out
}

// systemdSeconds parses the simple time spans used in the unit ("45", "45s", "2min").
func systemdSeconds(s string) (time.Duration, error) {
	s = strings.ReplaceAll(s, "min", "m")
	if _, err := strconv.Atoi(s); err == nil {
		s += "s"
	}
	return time.ParseDuration(s)
}

func TestSystemdUnit(t *testing.T) {
	unit := parseUnit(readFile(t, "deploy/nanobot.service"))
	svc := unit["Service"]
	if svc == nil {
		t.Fatal("deploy/nanobot.service has no [Service] section")
	}
	want := map[string]string{
		"DynamicUser":              "yes",
		"StateDirectory":           "nanobot",
		"WorkingDirectory":         "/var/lib/nanobot",
		"EnvironmentFile":          "-/etc/nanobot/env",
		"ExecStart":                "/usr/local/bin/nanobot gateway",
		"ExecReload":               "/bin/kill -HUP $MAINPID",
		"Restart":                  "on-failure",
		"RestartPreventExitStatus": exitConfig,
		"NoNewPrivileges":          "yes",
		"ProtectSystem":            "strict",
		"ProtectHome":              "yes",
		"PrivateTmp":               "yes",
		"PrivateDevices":           "yes",
		"RestrictAddressFamilies":  "AF_UNIX AF_INET AF_INET6",
	}
	for k, v := range want {
		if !slices.Contains(svc[k], v) {
			t.Errorf("nanobot.service: %s = %q, want %q", k, svc[k], v)
		}
	}
	if !slices.Contains(svc["Environment"], "NANOBOT_CONFIG=/var/lib/nanobot/config.yaml") {
		t.Errorf("nanobot.service: Environment = %q, want NANOBOT_CONFIG in the state directory", svc["Environment"])
	}
	if u := svc["User"]; len(u) > 0 && (u[0] == "root" || u[0] == "0") {
		t.Errorf("nanobot.service runs as %s", u[0])
	}
	for _, e := range svc["Environment"] {
		if secretName.MatchString(e) {
			t.Errorf("nanobot.service: Environment=%s: secrets belong in /etc/nanobot/env", e)
		}
	}
	stop, err := systemdSeconds(strings.Join(svc["TimeoutStopSec"], ""))
	if err != nil || stop <= shutdownTimeout(t) {
		t.Errorf("nanobot.service: TimeoutStopSec = %q, want longer than agent.shutdown_timeout %v", svc["TimeoutStopSec"], shutdownTimeout(t))
	}
	if !slices.Contains(unit["Install"]["WantedBy"], "multi-user.target") {
		t.Error("nanobot.service: no WantedBy=multi-user.target")
	}
}

// --- Kubernetes ---

type k8sObject struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	StringData map[string]string `yaml:"stringData"`
	Data       map[string]string `yaml:"data"`
	Spec       yaml.Node         `yaml:"spec"`
}

type k8sProbe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port int    `yaml:"port"`
	} `yaml:"httpGet"`
}

type k8sContainer struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Env     []struct {
		Name  string `yaml:"name"`
		Value string `yaml:"value"`
	} `yaml:"env"`
	EnvFrom []struct {
		SecretRef *struct {
			Name string `yaml:"name"`
		} `yaml:"secretRef"`
	} `yaml:"envFrom"`
	Ports []struct {
		ContainerPort int `yaml:"containerPort"`
	} `yaml:"ports"`
	LivenessProbe   k8sProbe `yaml:"livenessProbe"`
	ReadinessProbe  k8sProbe `yaml:"readinessProbe"`
	SecurityContext struct {
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   bool  `yaml:"readOnlyRootFilesystem"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		SubPath   string `yaml:"subPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	} `yaml:"volumeMounts"`
}

// container returns the container called name, or nil.
func container(cs []k8sContainer, name string) *k8sContainer {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

type k8sDeployment struct {
	Replicas int `yaml:"replicas"`
	Strategy struct {
		Type string `yaml:"type"`
	} `yaml:"strategy"`
	Template struct {
		Spec struct {
			TerminationGracePeriodSeconds int `yaml:"terminationGracePeriodSeconds"`
			SecurityContext               struct {
				RunAsNonRoot bool `yaml:"runAsNonRoot"`
				RunAsUser    int  `yaml:"runAsUser"`
				RunAsGroup   int  `yaml:"runAsGroup"`
				FSGroup      int  `yaml:"fsGroup"`
			} `yaml:"securityContext"`
			InitContainers []k8sContainer `yaml:"initContainers"`
			Containers     []k8sContainer `yaml:"containers"`
			Volumes        []struct {
				Name                  string `yaml:"name"`
				PersistentVolumeClaim *struct {
					ClaimName string `yaml:"claimName"`
				} `yaml:"persistentVolumeClaim"`
				ConfigMap *struct {
					Name string `yaml:"name"`
				} `yaml:"configMap"`
			} `yaml:"volumes"`
		} `yaml:"spec"`
	} `yaml:"template"`
}

// kubernetesObjects are the manifest's objects by "Kind/name".
func kubernetesObjects(t *testing.T) map[string]k8sObject {
	t.Helper()
	dec := yaml.NewDecoder(strings.NewReader(readFile(t, "deploy/kubernetes.yaml")))
	objs := map[string]k8sObject{}
	for {
		var o k8sObject
		err := dec.Decode(&o)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return objs
			}
			t.Fatalf("deploy/kubernetes.yaml: %v", err)
		}
		if o.Kind != "" {
			objs[o.Kind+"/"+o.Metadata.Name] = o
		}
	}
}

func TestKubernetes(t *testing.T) {
	objs := kubernetesObjects(t)
	for _, key := range []string{"Deployment/nanobot", "PersistentVolumeClaim/nanobot-data", "Secret/nanobot-secrets", "Secret/nanobot-litestream", "ConfigMap/nanobot-config"} {
		if _, ok := objs[key]; !ok {
			t.Errorf("deploy/kubernetes.yaml has no %s", key)
		}
	}
	for key, o := range objs {
		for k, v := range o.StringData {
			if v != "" {
				t.Errorf("%s: %s holds a value; the manifest must only carry empty placeholders", key, k)
			}
		}
	}
	for _, k := range []string{"TELEGRAM_BOT_TOKEN", "OPENAI_API_KEY"} {
		if _, ok := objs["Secret/nanobot-secrets"].StringData[k]; !ok {
			t.Errorf("Secret lacks %s", k)
		}
	}

	var d k8sDeployment
	dep := objs["Deployment/nanobot"]
	if err := dep.Spec.Decode(&d); err != nil {
		t.Fatalf("Deployment spec: %v", err)
	}
	if d.Replicas != 1 || d.Strategy.Type != "Recreate" {
		t.Errorf("Deployment replicas %d strategy %q, want 1 and Recreate (SQLite is single-writer)", d.Replicas, d.Strategy.Type)
	}
	pod := d.Template.Spec
	if got := time.Duration(pod.TerminationGracePeriodSeconds) * time.Second; got <= shutdownTimeout(t) {
		t.Errorf("terminationGracePeriodSeconds %v, want longer than agent.shutdown_timeout %v", got, shutdownTimeout(t))
	}
	if sc := pod.SecurityContext; !sc.RunAsNonRoot || strconv.Itoa(sc.RunAsUser) != runtimeUID ||
		strconv.Itoa(sc.RunAsGroup) != runtimeUID || strconv.Itoa(sc.FSGroup) != runtimeUID {
		t.Errorf("pod securityContext %+v, want runAsNonRoot and runAsUser, runAsGroup and fsGroup %s", sc, runtimeUID)
	}
	cp := container(pod.Containers, "nanobot")
	if cp == nil {
		t.Fatalf("Deployment has no nanobot container")
	}
	c := *cp
	if !slices.Equal(c.Args, []string{"gateway"}) {
		t.Errorf("container args %q, want [gateway]", c.Args)
	}
	if len(c.Ports) != 1 || strconv.Itoa(c.Ports[0].ContainerPort) != adminPort {
		t.Errorf("container ports %+v, want %s", c.Ports, adminPort)
	}
	for _, p := range []struct {
		name string
		pr   k8sProbe
		path string
	}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
		if p.pr.HTTPGet.Path != p.path || strconv.Itoa(p.pr.HTTPGet.Port) != adminPort {
			t.Errorf("%s probe %+v, want GET %s on %s", p.name, p.pr.HTTPGet, p.path, adminPort)
		}
	}
	if !c.SecurityContext.ReadOnlyRootFilesystem || c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation {
		t.Errorf("container securityContext %+v, want a read-only root and no privilege escalation", c.SecurityContext)
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m.Name
	}
	var configPath string
	for _, e := range c.Env {
		if e.Name == "NANOBOT_CONFIG" {
			configPath = e.Value
		}
	}
	if mounts[dataDir] == "" || mounts["/tmp"] == "" || mounts[filepath.Dir(configPath)] == "" {
		t.Errorf("container mounts %v, want %s, /tmp and the directory of NANOBOT_CONFIG %q", mounts, dataDir, configPath)
	}
	for _, v := range pod.Volumes {
		switch {
		case v.Name == mounts[dataDir] && (v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != objs["PersistentVolumeClaim/nanobot-data"].Metadata.Name):
			t.Errorf("volume %s on %s is not the PersistentVolumeClaim", v.Name, dataDir)
		case v.Name == mounts[filepath.Dir(configPath)] && (v.ConfigMap == nil || v.ConfigMap.Name != objs["ConfigMap/nanobot-config"].Metadata.Name):
			t.Errorf("volume %s on %s is not the ConfigMap", v.Name, filepath.Dir(configPath))
		}
	}
	if _, ok := objs["ConfigMap/nanobot-config"].Data[filepath.Base(configPath)]; !ok {
		t.Errorf("ConfigMap has no %s, which NANOBOT_CONFIG %q names", filepath.Base(configPath), configPath)
	}
}

// --- configs shipped for containers ---

// shutdownTimeout is the default agent.shutdown_timeout, which every stop
// grace period must exceed.
func shutdownTimeout(*testing.T) time.Duration {
	return config.Default().Agent.ShutdownTimeout
}

func TestConfigDefaultPort(t *testing.T) {
	listen := config.Default().Gateway.Listen
	if _, port, err := net.SplitHostPort(listen); err != nil || port != adminPort {
		t.Errorf("default gateway.listen %q, the deployment files use port %s", listen, adminPort)
	}
}

// The configs shipped for containers load with the real loader (strict:
// unknown keys fail) and put the listener and the state where the manifests
// expect them.
func TestContainerConfigs(t *testing.T) {
	configs := map[string]struct {
		path, src string
	}{
		"deploy/config.docker.yaml": {dockerConfig, readFile(t, "deploy/config.docker.yaml")},
		"kubernetes ConfigMap":      {k8sConfigPath(t), kubernetesObjects(t)["ConfigMap/nanobot-config"].Data["config.yaml"]},
	}
	env := func(name string) (string, bool) {
		switch name {
		case "TELEGRAM_BOT_TOKEN":
			return "123:test-token-not-real", true
		case "OPENAI_API_KEY":
			return "test-key-not-real", true
		}
		return "", false
	}
	for name, c := range configs {
		cfg, err := config.Parse(c.path, []byte(c.src), env)
		if err != nil {
			t.Errorf("%s does not load: %v", name, err)
			continue
		}
		got := []string{cfg.Gateway.Listen, cfg.Storage.Path, cfg.Agent.Workspace,
			string(cfg.Provider.APIKey), string(cfg.Channels.Telegram.Token)}
		want := []string{"0.0.0.0:" + adminPort, dataDir + "/nanobot.db", dataDir + "/workspace",
			"test-key-not-real", "123:test-token-not-real"}
		if !slices.Equal(got, want) {
			t.Errorf("%s: listen, storage, workspace, api key, token = %q, want %q", name, got, want)
		}
		if cfg.Agent.ShutdownTimeout != shutdownTimeout(t) {
			t.Errorf("%s: agent.shutdown_timeout %v, want %v as the grace periods assume", name, cfg.Agent.ShutdownTimeout, shutdownTimeout(t))
		}
	}
}

// k8sConfigPath is NANOBOT_CONFIG in the Deployment.
func k8sConfigPath(t *testing.T) string {
	t.Helper()
	var d k8sDeployment
	dep := kubernetesObjects(t)["Deployment/nanobot"]
	if err := dep.Spec.Decode(&d); err != nil || container(d.Template.Spec.Containers, "nanobot") == nil {
		t.Fatalf("Deployment spec: %v", err)
	}
	for _, e := range container(d.Template.Spec.Containers, "nanobot").Env {
		if e.Name == "NANOBOT_CONFIG" {
			return e.Value
		}
	}
	t.Fatal("Deployment sets no NANOBOT_CONFIG")
	return ""
}

// --- health, secrets, CLI ---

// The paths the manifests probe are the ones the admin endpoint serves.
func TestProbedPathsServed(t *testing.T) {
	s := admin.NewServer("127.0.0.1:0", admin.NewMetrics(), nil, nil)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(t.Context())
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		resp, err := http.Get("http://" + s.Addr() + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s = %d, want 200", path, resp.StatusCode)
		}
	}
	if err := admin.Probe(t.Context(), "0.0.0.0:"+portOf(t, s.Addr()), false); err != nil {
		t.Errorf("Probe of a 0.0.0.0 listen address (as in containers) = %v", err)
	}
}

func portOf(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

var (
	secretName = regexp.MustCompile(`(?i)(TOKEN|API_KEY|SECRET|PASSWORD)\s*=`)
	secretLike = []*regexp.Regexp{
		regexp.MustCompile(`\b\d{6,12}:[A-Za-z0-9_-]{30,}`),                                      // Telegram bot token
		regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{16,}`),                                            // OpenAI-style key
		regexp.MustCompile(`(?m)^[ \t]*(TELEGRAM_BOT_TOKEN|OPENAI_API_KEY)[ \t]*=[ \t]*[^\s#]+`), // filled-in env file
		regexp.MustCompile(`(?m)^[ \t]*(token|api_key|secret_token)[ \t]*:[ \t]*[^\s$#"'{]`),     // literal in YAML config
	}
)

func TestNoSecretsInDeployFiles(t *testing.T) {
	files := []string{"Dockerfile", ".dockerignore"}
	entries, err := os.ReadDir("deploy")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Type().IsRegular() && e.Name() != ".env" {
			files = append(files, filepath.Join("deploy", e.Name()))
		}
	}
	for _, f := range files {
		src := readFile(t, f)
		for _, re := range secretLike {
			if m := re.FindString(src); m != "" {
				t.Errorf("%s: looks like a secret value: %q", f, m)
			}
		}
	}
	env := readFile(t, "deploy/.env.example")
	for _, k := range []string{"TELEGRAM_BOT_TOKEN=", "OPENAI_API_KEY="} {
		if !strings.Contains(env, "\n"+k+"\n") && !strings.HasPrefix(env, k+"\n") {
			t.Errorf("deploy/.env.example lacks the empty placeholder %s", k)
		}
	}
}

func TestSecretPatterns(t *testing.T) {
	leaks := []string{
		"TELEGRAM_BOT_TOKEN=123456789:AAH" + strings.Repeat("x", 32),
		"OPENAI_API_KEY=sk-" + strings.Repeat("a", 24),
		"    token: 123:abc",
		"api_key: plain",
	}
	for _, s := range leaks {
		if !slices.ContainsFunc(secretLike, func(re *regexp.Regexp) bool { return re.MatchString(s) }) {
			t.Errorf("secret patterns miss %q", s)
		}
	}
	clean := []string{"TELEGRAM_BOT_TOKEN=", "OPENAI_API_KEY=\nNEXT=1", "token:\n  api_url: x", "    token: ${TELEGRAM_BOT_TOKEN}", `api_key: ""`, "listen: 0.0.0.0:18790"}
	for _, s := range clean {
		if slices.ContainsFunc(secretLike, func(re *regexp.Regexp) bool { return re.MatchString(s) }) {
			t.Errorf("secret patterns flag the placeholder %q", s)
		}
	}
}

// The CLI the images run: a main.version the build stamps, a health
// subcommand, and the EX_CONFIG exit status the unit does not restart.
func TestCLIMatchesDeployment(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("cmd", "nanobot", "*.go"))
	fset := token.NewFileSet()
	var (
		hasVersion, hasHealth, hasExitConfig bool
		hasCommit, versionReadsCommit        bool
		parsed                               int
	)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed++
		// Only a package-level variable can be stamped with -X.
		for _, d := range file.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.VAR {
				for _, spec := range g.Specs {
					hasVersion = hasVersion || slices.ContainsFunc(spec.(*ast.ValueSpec).Names,
						func(id *ast.Ident) bool { return id.Name == "version" })
					hasCommit = hasCommit || slices.ContainsFunc(spec.(*ast.ValueSpec).Names,
						func(id *ast.Ident) bool { return id.Name == "commit" })
				}
			}
		}
		// `nanobot version` prints the stamped commit.
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == "printVersion" {
				ast.Inspect(fn.Body, func(n ast.Node) bool {
					id, ok := n.(*ast.Ident)
					versionReadsCommit = versionReadsCommit || ok && id.Name == "commit"
					return true
				})
			}
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok {
				hasHealth = hasHealth || lit.Value == `"health"`
				hasExitConfig = hasExitConfig || lit.Value == exitConfig
			}
			return true
		})
	}
	if parsed == 0 {
		t.Skip("cmd/nanobot has no Go files yet")
	}
	if !hasVersion {
		t.Error("cmd/nanobot: no `version` variable for -ldflags -X main.version")
	}
	if !hasCommit || !versionReadsCommit {
		t.Errorf("cmd/nanobot: a package-level `commit` variable %v, read by printVersion %v: the image stamps -X main.commit", hasCommit, versionReadsCommit)
	}
	if !hasHealth {
		t.Error(`cmd/nanobot: no "health" subcommand, which the health checks run`)
	}
	if !hasExitConfig {
		t.Errorf("cmd/nanobot: exit status %s (EX_CONFIG) not found; the systemd unit relies on it", exitConfig)
	}
}
