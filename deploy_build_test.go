package nanobot_test

// Building the images for real, where a container engine runs. CI runs this
// as a step of its own (.ci/run), after the suite and with a longer
// timeout; elsewhere it runs only when asked, since a build takes minutes.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// imageBuildEnv asks for the image builds: 1 builds, anything else skips.
const imageBuildEnv = "NANOBOT_IMAGE_BUILD"

// containerEngine is the first of docker and podman that is installed and
// whose daemon (or service) answers.
func containerEngine(ctx context.Context) (string, error) {
	var why []error
	for _, name := range []string{"docker", "podman"} {
		path, err := exec.LookPath(name)
		if err != nil {
			why = append(why, err)
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		out, err := exec.CommandContext(ctx, path, "info").CombinedOutput()
		cancel()
		if err != nil {
			why = append(why, fmt.Errorf("%s info: %w: %s", name, err, lastLine(out)))
			continue
		}
		return path, nil
	}
	return "", errors.Join(why...)
}

// lastLine is the last non-empty line of a command's output, which says
// why it failed.
func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// unreachable are what an engine prints when it cannot reach a registry,
// a module proxy or a package mirror: a machine without that network
// cannot build the images, which says nothing about the Dockerfile.
var unreachable = []string{
	"Temporary failure resolving", "Could not resolve", "no such host", "dial tcp", "i/o timeout",
	"TLS handshake timeout", "connection refused", "network is unreachable", "failed to resolve source metadata",
	"pull access denied", "toomanyrequests", "Failed to fetch", "proxy.golang.org",
}

// engineRun runs the engine and returns its output; a failure ends the test
// with the output's tail, or skips it when the engine could not reach the
// network the build needs.
func engineRun(t *testing.T, ctx context.Context, engine string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, engine, args...)
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		tail := out.String()
		if len(tail) > 4000 {
			tail = tail[len(tail)-4000:]
		}
		for _, u := range unreachable {
			if strings.Contains(tail, u) {
				t.Skipf("%s %s cannot reach the network the build needs (%q): %s", filepath.Base(engine), args[0], u, lastLine([]byte(tail)))
			}
		}
		t.Fatalf("%s %s: %v\n%s", filepath.Base(engine), strings.Join(args, " "), err, tail)
	}
	return out.String()
}

func TestImageTargetsBuild(t *testing.T) {
	if os.Getenv(imageBuildEnv) != "1" {
		t.Skipf("image builds take minutes: %s=1 builds both targets (.ci/run does, where an engine runs)", imageBuildEnv)
	}
	engine, err := containerEngine(t.Context())
	if err != nil {
		t.Skipf("no container engine to build the images with: %v", err)
	}
	ctx := t.Context()
	if d, ok := t.Deadline(); ok {
		if time.Until(d) < 10*time.Minute {
			t.Skipf("the image builds need more than the %v left before the test timeout: run with -timeout 30m", time.Until(d).Round(time.Second))
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-time.Minute))
		defer cancel()
	}
	rev := "0123456789abcdef0123456789abcdef01234567"
	if out, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output(); err == nil {
		rev = strings.TrimSpace(string(out))
	}
	for _, target := range []string{"full", "slim"} {
		tag := "nanobot-ci:" + target
		args := []string{"build", "--target", target, "--build-arg", "VERSION=ci", "--build-arg", "VCS_REF=" + rev, "-t", tag}
		if filepath.Base(engine) == "podman" {
			args = append(args, "--format", "docker") // the OCI format drops HEALTHCHECK
		}
		start := time.Now()
		engineRun(t, ctx, engine, append(args, ".")...)
		t.Logf("%s build --target %s: %v", filepath.Base(engine), target, time.Since(start).Round(time.Second))
		t.Cleanup(func() { exec.Command(engine, "rmi", tag).Run() })

		// What the build stamped and configured, as the image reports it.
		if out := engineRun(t, ctx, engine, "run", "--rm", tag, "version"); !strings.Contains(out, "nanobot ci\n") || !strings.Contains(out, "commit: "+rev[:12]) {
			t.Errorf("%s: nanobot version printed %q, want version ci and commit %s", target, out, rev[:12])
		}
		if user := strings.TrimSpace(engineRun(t, ctx, engine, "image", "inspect", "--format", "{{.Config.User}}", tag)); user != runtimeUID+":"+runtimeUID {
			t.Errorf("%s: image user %q, want %s:%s", target, user, runtimeUID, runtimeUID)
		}
		if hc := engineRun(t, ctx, engine, "image", "inspect", "--format", "{{json .Config.Healthcheck}}", tag); !strings.Contains(hc, `"nanobot","health"`) {
			t.Errorf("%s: image health check %s, want nanobot health", target, strings.TrimSpace(hc))
		}
	}
}
