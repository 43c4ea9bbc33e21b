package nanobot_test

// Litestream replicates the database the image writes. These checks tie its
// config to the image's database path, the compose service and the
// Kubernetes sidecar to the same volume, and the daemon's SQLite settings to
// what Litestream needs (the per-connection pragmas are checked in
// memory.TestPragmasSuitLitestream).

import (
	"database/sql"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/nanobot-go/nanobot/config"
	"github.com/nanobot-go/nanobot/memory"
)

type litestreamConfig struct {
	DBs []struct {
		Path     string           `yaml:"path"`
		Replicas []map[string]any `yaml:"replicas"`
	} `yaml:"dbs"`
}

func parseLitestream(t *testing.T, name, src string) litestreamConfig {
	t.Helper()
	var c litestreamConfig
	if err := yaml.Unmarshal([]byte(src), &c); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return c
}

// imageDBPath is storage.path in the config the image is run with.
func imageDBPath(t *testing.T) string {
	t.Helper()
	env := func(string) (string, bool) { return "x", true }
	cfg, err := config.Parse(dockerConfig, []byte(readFile(t, "deploy/config.docker.yaml")), env)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Storage.Path
}

func TestLitestreamConfig(t *testing.T) {
	src := readFile(t, "deploy/litestream.yml")
	c := parseLitestream(t, "deploy/litestream.yml", src)
	if len(c.DBs) != 1 {
		t.Fatalf("deploy/litestream.yml lists %d databases, want 1", len(c.DBs))
	}
	db := c.DBs[0]
	if want := imageDBPath(t); db.Path != want || filepath.Dir(db.Path) != dataDir {
		t.Errorf("litestream.yml replicates %s; the image's database is %s on the %s volume", db.Path, want, dataDir)
	}
	if len(db.Replicas) == 0 {
		t.Fatal("litestream.yml has no replica")
	}
	r := db.Replicas[0]
	if r["type"] != "s3" || r["bucket"] != "${LITESTREAM_BUCKET}" {
		t.Errorf("replica %v: want type s3 and the bucket from ${LITESTREAM_BUCKET}", r)
	}
	for _, k := range []string{"access-key-id", "secret-access-key"} {
		if _, ok := r[k]; ok {
			t.Errorf("replica sets %s: credentials belong in the environment", k)
		}
	}

	// The Kubernetes ConfigMap carries the same file.
	k8s := parseLitestream(t, "ConfigMap litestream.yml", kubernetesObjects(t)["ConfigMap/nanobot-config"].Data["litestream.yml"])
	if !reflect.DeepEqual(k8s, c) {
		t.Errorf("the ConfigMap's litestream.yml differs from deploy/litestream.yml:\n%+v\n%+v", k8s, c)
	}

	// The restore procedure names the commands and the path.
	readme := readFile(t, "deploy/README.md")
	for _, want := range []string{"litestream restore", "nanobot restore", db.Path, "-litestream"} {
		if !strings.Contains(readme, want) {
			t.Errorf("deploy/README.md does not mention %q in the restore procedure", want)
		}
	}
}

// The daemon keeps its database in WAL mode, which Litestream requires.
func TestDatabaseIsInWALMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nanobot.db")
	s, err := memory.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode string
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode of the daemon's database = %q (%v), want wal", mode, err)
	}
}

func TestComposeLitestream(t *testing.T) {
	services := composeServices(t)
	n, l := services["nanobot"], services["litestream"]
	if l.Image == "" {
		t.Fatal("deploy/docker-compose.yml has no litestream service")
	}
	checks := []struct {
		name string
		ok   bool
	}{
		{"profiles: [litestream], off by default", slices.Equal(l.Profiles, []string{"litestream"})},
		{"a pinned litestream/litestream image", strings.HasPrefix(l.Image, "litestream/litestream:") && !strings.HasSuffix(l.Image, ":latest")},
		{"command: [replicate]", slices.Equal(l.Command, []string{"replicate"})},
		{"user: " + runtimeUID + ":" + runtimeUID + ", the owner of the data", l.User == n.User},
		{"env_file: litestream.env, not nanobot's .env", l.EnvFile == "litestream.env"},
		{"read_only: true", l.ReadOnly},
		{"cap_drop: [ALL]", slices.Equal(l.CapDrop, []string{"ALL"})},
		{"no-new-privileges", slices.Contains(l.SecurityOpt, "no-new-privileges:true")},
		{"litestream.yml at /etc/litestream.yml", slices.Contains(l.Volumes, "./litestream.yml:/etc/litestream.yml:ro")},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("compose service litestream: want %s", c.name)
		}
	}
	// The very volume nanobot writes its database to.
	var data string
	for _, v := range n.Volumes {
		if strings.HasSuffix(v, ":"+dataDir) {
			data = v
		}
	}
	if data == "" || !slices.Contains(l.Volumes, data) {
		t.Errorf("litestream volumes %q lack nanobot's data volume %q", l.Volumes, data)
	}
	env := readFile(t, "deploy/litestream.env.example")
	for _, k := range []string{"LITESTREAM_BUCKET=", "LITESTREAM_ACCESS_KEY_ID=", "LITESTREAM_SECRET_ACCESS_KEY="} {
		if !strings.Contains(env, "\n"+k+"\n") {
			t.Errorf("deploy/litestream.env.example lacks the empty placeholder %s", k)
		}
	}
}

func TestKubernetesLitestream(t *testing.T) {
	objs := kubernetesObjects(t)
	var d k8sDeployment
	dep := objs["Deployment/nanobot"]
	if err := dep.Spec.Decode(&d); err != nil {
		t.Fatal(err)
	}
	pod := d.Template.Spec
	n := container(pod.Containers, "nanobot")
	side := container(pod.Containers, "litestream")
	restore := container(pod.InitContainers, "litestream-restore")
	if n == nil || side == nil || restore == nil {
		t.Fatalf("the pod needs the nanobot and litestream containers and the litestream-restore init container")
	}
	dataVolume := ""
	for _, m := range n.VolumeMounts {
		if m.MountPath == dataDir {
			dataVolume = m.Name
		}
	}
	composeImage := composeServices(t)["litestream"].Image
	dbPath := parseLitestream(t, "deploy/litestream.yml", readFile(t, "deploy/litestream.yml")).DBs[0].Path
	for _, c := range []*k8sContainer{side, restore} {
		if c.Image != composeImage {
			t.Errorf("%s image %q, compose uses %q: keep one Litestream version", c.Name, c.Image, composeImage)
		}
		mounts := map[string]string{}
		sub := map[string]string{}
		for _, m := range c.VolumeMounts {
			mounts[m.MountPath] = m.Name
			sub[m.MountPath] = m.SubPath
		}
		if mounts[dataDir] != dataVolume {
			t.Errorf("%s mounts %q on %s, nanobot mounts %q", c.Name, mounts[dataDir], dataDir, dataVolume)
		}
		if sub["/etc/litestream.yml"] != "litestream.yml" {
			t.Errorf("%s does not mount the ConfigMap's litestream.yml at /etc/litestream.yml", c.Name)
		}
		if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != "nanobot-litestream" {
			t.Errorf("%s must read only the nanobot-litestream Secret", c.Name)
		}
		if !c.SecurityContext.ReadOnlyRootFilesystem || c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation {
			t.Errorf("%s securityContext %+v, want a read-only root and no privilege escalation", c.Name, c.SecurityContext)
		}
	}
	if !slices.Equal(side.Args, []string{"replicate"}) {
		t.Errorf("litestream args %q, want [replicate]", side.Args)
	}
	// The init container's script, in order: leave an existing database
	// alone, restore, and only after a restore drop Litestream's state of
	// the old file (the gateway's sign that a replica must come first).
	if !slices.Equal(restore.Command, []string{"/bin/sh", "-c"}) || len(restore.Args) != 1 {
		t.Fatalf("litestream-restore command %q args %q, want a /bin/sh -c script", restore.Command, restore.Args)
	}
	script := restore.Args[0]
	steps := []string{
		"db=" + dbPath,
		`if [ -e "$db" ]; then exit 0; fi`,
		`litestream restore -if-replica-exists "$db"`,
		`if [ -e "$db" ]; then rm -rf ` + filepath.Join(filepath.Dir(dbPath), "."+filepath.Base(dbPath)+"-litestream") + "; fi",
	}
	at := 0
	for _, step := range steps {
		i := strings.Index(script[at:], step)
		if i < 0 {
			t.Errorf("litestream-restore script lacks, in order, %q:\n%s", step, script)
			break
		}
		at += i + len(step)
	}
	if !strings.HasPrefix(script, "set -eu\n") {
		t.Errorf("litestream-restore script does not start with set -eu:\n%s", script)
	}
	for _, k := range []string{"LITESTREAM_BUCKET", "LITESTREAM_ACCESS_KEY_ID", "LITESTREAM_SECRET_ACCESS_KEY"} {
		if _, ok := objs["Secret/nanobot-litestream"].StringData[k]; !ok {
			t.Errorf("Secret nanobot-litestream lacks %s", k)
		}
	}
	for _, e := range n.EnvFrom {
		if e.SecretRef != nil && e.SecretRef.Name == "nanobot-litestream" {
			t.Error("the nanobot container reads the storage credentials")
		}
	}
}

// Every documented `docker compose run` of the litestream service passes
// --no-deps while the service depends on nanobot: otherwise compose starts
// the gateway first, which takes the path the restore must write to, and
// the restore refuses it.
func TestComposeRestoreRunsWithoutDeps(t *testing.T) {
	if !slices.Contains(composeServices(t)["litestream"].DependsOn, "nanobot") {
		t.Skip("the litestream service no longer depends on nanobot")
	}
	n := 0
	for _, doc := range []string{"README.md", "deploy/README.md", "deploy/docker-compose.yml"} {
		for i, line := range strings.Split(readFile(t, doc), "\n") {
			if !strings.Contains(line, " run ") || !strings.Contains(line, "litestream restore") {
				continue
			}
			n++
			if !strings.Contains(line, "--no-deps") {
				t.Errorf("%s:%d runs the litestream service without --no-deps: %s", doc, i+1, strings.TrimSpace(line))
			}
		}
	}
	if n == 0 {
		t.Error("no documented restore from the replica found")
	}
}
