package safety

import "strings"

func registerContainerHandlers(reg func(handler, ...string)) {
	reg((*call).docker, "docker", "podman", "nerdctl", "docker-compose", "podman-compose")
	reg((*call).kubectl, "kubectl", "oc", "k3s", "microk8s")
	reg((*call).helm, "helm", "minikube", "kind", "k3d")
	reg((*call).lxc, "lxc", "incus")
}

// docker judges container engines: read-only commands and builds are
// allowed, starting or removing containers is asked, breaking out of the
// container onto the host is refused.
func (c *call) docker() outcome {
	i, _ := parseOpts(c.argv, 1, optSpec{short: "Hcl", long: []string{"host", "context", "config", "log-level", "tlscacert", "tlscert", "tlskey"}})
	args := c.argv[i:]
	if c.name == "docker-compose" || c.name == "podman-compose" {
		args = append([]arg{litArg("compose")}, args...)
	}
	if len(args) == 0 {
		return judgedArgs
	}
	verb := args[0].val
	rest := args[1:]
	switch verb {
	case "container", "image", "volume", "network", "system", "compose", "buildx", "builder", "context", "plugin", "swarm", "service", "stack", "secret", "config", "node", "trust", "manifest", "machine":
		sub := ""
		k, _ := parseOpts(args, 1, optSpec{short: "fp", long: []string{"file", "project-name", "profile", "env-file", "project-directory"}})
		if k < len(args) {
			sub = args[k].val
			rest = args[k+1:]
		}
		verb = verb + " " + sub
	}
	switch verb {
	case "ps", "images", "logs", "inspect", "version", "info", "build", "top", "stats", "port", "diff", "history",
		"search", "events", "tag", "save", "help", "--version", "-v", "buildx build", "buildx ls", "builder ls",
		"container ls", "container list", "container inspect", "container logs", "container top", "container stats",
		"container port", "container diff", "image ls", "image list", "image inspect", "image history", "image build",
		"image save", "image tag", "volume ls", "volume list", "volume inspect", "network ls", "network list",
		"network inspect", "system df", "system info", "system events", "context ls", "context list", "context show",
		"context inspect", "compose ps", "compose logs", "compose config", "compose build", "compose ls", "compose images",
		"compose top", "compose version", "compose convert", "plugin ls", "manifest inspect", "buildx version", "compose ",
		"container ", "image ", "volume ", "network ", "system ":
		return judgedArgs
	case "run", "create", "exec", "container run", "container create", "container exec", "compose run", "compose exec",
		"compose up", "compose create", "service create":
		c.dockerRunFlags(rest)
		c.ask("containers", "starts a container")
		return judgedArgs
	case "login", "logout":
		c.ask("containers", "docker "+verb+" stores or removes registry credentials")
		return judgedArgs
	case "push", "image push", "compose push":
		c.ask("publish", "pushes an image to a registry")
		return judgedArgs
	}
	if strings.HasPrefix(verb, "secret ") {
		c.deny("secrets", "docker "+verb+" manages secrets")
		return judgedArgs
	}
	c.ask("containers", "docker "+verb+" changes containers, images or volumes")
	return judgedArgs
}

// dockerRunFlags refuses the options that hand the host to a container.
func (c *call) dockerRunFlags(rest []arg) {
	for k := 0; k < len(rest); k++ {
		v := rest[k].val
		next := func() string {
			if _, val, ok := strings.Cut(v, "="); ok {
				return val
			}
			if k+1 < len(rest) {
				return rest[k+1].val
			}
			return ""
		}
		name, _, _ := strings.Cut(v, "=")
		switch name {
		case "--privileged":
			c.deny("privilege", "runs a privileged container")
		case "--pid", "--ipc", "--userns", "--uts", "--cgroupns":
			if next() == "host" {
				c.deny("privilege", "shares the host "+strings.TrimPrefix(name, "--")+" namespace with a container")
			}
		case "--cap-add":
			switch strings.ToUpper(strings.TrimPrefix(strings.ToUpper(next()), "CAP_")) {
			case "ALL", "SYS_ADMIN", "SYS_PTRACE", "SYS_MODULE", "DAC_READ_SEARCH", "SYS_RAWIO", "DAC_OVERRIDE":
				c.deny("privilege", "gives a container dangerous capabilities")
			}
		case "--security-opt":
			if strings.Contains(next(), "unconfined") || strings.Contains(next(), "no-new-privileges=false") {
				c.deny("privilege", "disables container confinement")
			}
		case "--device":
			c.deny("raw_device", "passes a host device into a container: "+next())
		case "-v", "--volume", "--mount":
			c.dockerMount(name, next())
		}
		if strings.HasPrefix(v, "-v") && len(v) > 2 && v != "-v" {
			c.dockerMount("-v", v[2:])
		}
		if !strings.HasPrefix(v, "-") && k > 0 && !strings.HasPrefix(rest[k-1].val, "-") {
			break // image name reached; the rest is the container's command
		}
	}
}

func (c *call) dockerMount(opt, spec string) {
	src := spec
	if opt == "--mount" {
		src = ""
		for _, f := range strings.Split(spec, ",") {
			if k, v, ok := strings.Cut(f, "="); ok && (k == "source" || k == "src") {
				src = v
			}
		}
	} else if s, _, ok := strings.Cut(spec, ":"); ok {
		src = s
	} else {
		return // anonymous volume
	}
	if src == "" || !(strings.HasPrefix(src, "/") || strings.HasPrefix(src, ".") || strings.HasPrefix(src, "~") || strings.Contains(src, unknownMark)) {
		return // named volume
	}
	p, ok := c.j.resolve(arg{val: src}, c.sc)
	switch {
	case !ok:
		c.deny("privilege", "mounts a host path only known at run time into a container")
	case p == "/" || strings.Contains(p, "docker.sock") || strings.Contains(p, "containerd.sock") || strings.Contains(p, "podman.sock"):
		c.deny("privilege", "mounts the host root or the container engine socket: "+p)
	case c.j.isProtected(p, true):
		c.deny("self_tamper", "mounts nanobot's own files into a container: "+p)
	case c.j.isSecret(p) || (c.j.p.home != "" && ancestorOf(p, c.j.p.home)) || anyAncestor(p, c.j.homePaths(homeSecrets)):
		c.deny("secrets", "mounts credentials or the home directory into a container: "+p)
	case c.j.inWorkspace(p) || isTemp(p):
	case anyUnder(p, systemDirs) || isRawDevice(p):
		c.deny("privilege", "mounts system directories into a container: "+p)
	}
}

func (c *call) kubectl() outcome {
	_, ops := c.split(optSpec{short: "nolcfLsx", long: []string{"namespace", "output", "selector", "context", "cluster", "user", "kubeconfig", "filename", "server", "token", "template", "container", "field-selector", "sort-by", "type", "from-literal", "from-file", "image", "replicas", "port"}})
	if len(ops) == 0 {
		return judgedArgs
	}
	verb := ops[0].val
	joined := " " + strings.Join(argTexts(c.argv[1:]), " ") + " "
	switch verb {
	case "get", "describe":
		if strings.Contains(joined, " secret") {
			c.deny("secrets", "reads cluster secrets")
		}
		return judgedArgs
	case "config":
		if strings.Contains(joined, "--raw") {
			c.deny("secrets", "prints cluster credentials")
		}
		if strings.Contains(joined, " view ") || strings.Contains(joined, " get-") || strings.Contains(joined, " current-context ") {
			return judgedArgs
		}
	case "logs", "top", "explain", "version", "api-resources", "api-versions", "cluster-info", "auth", "diff", "wait", "events", "completion", "plugin", "kustomize":
		return judgedArgs
	}
	c.ask("containers", "kubectl "+verb+" changes the cluster")
	return judgedArgs
}

// lxc judges LXD and Incus: privileged containers and host disks handed
// to a container are root on the host; other changes are asked about.
func (c *call) lxc() outcome {
	joined := " " + strings.Join(argTexts(c.argv[1:]), " ") + " "
	switch {
	case strings.Contains(joined, "security.privileged=true") || strings.Contains(joined, "security.privileged true") ||
		strings.Contains(joined, " source=/ ") || strings.Contains(joined, "raw.lxc") || strings.Contains(joined, "security.nesting=true"):
		c.deny("privilege", c.name+" gives a container the host")
	case len(c.argv) < 2:
	default:
		switch c.argv[1].val {
		case "list", "ls", "info", "version", "remote", "image", "profile", "config", "storage", "network", "query", "monitor", "help":
			if c.argv[1].val != "config" || strings.Contains(joined, " show ") || strings.Contains(joined, " get ") {
				return judgedArgs
			}
		}
		c.ask("containers", c.name+" "+c.argv[1].val+" changes containers")
	}
	return judgedArgs
}

func (c *call) helm() outcome {
	_, ops := c.split(optSpec{short: "nfo", long: []string{"namespace", "values", "set", "output", "kube-context", "version"}})
	if len(ops) == 0 {
		return judgedArgs
	}
	if ops[0].val == "repo" && len(ops) > 1 && ops[1].val == "add" {
		c.ask("package_install", c.name+" repo add adds a chart repository")
		return judgedArgs
	}
	switch ops[0].val {
	case "list", "ls", "status", "template", "lint", "show", "search", "history", "get", "version", "env", "repo", "dependency", "package", "verify":
		return judgedArgs
	}
	c.ask("containers", c.name+" "+ops[0].val+" changes the cluster")
	return judgedArgs
}
