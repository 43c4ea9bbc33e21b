package safety

import (
	"regexp"
	"strings"
)

// Credentials are also read through tools whose main job is something
// else: a cloud CLI that mints or prints a token, git printing the
// configuration keys that hold credentials, a file search whose pattern
// is a glob that matches key files.

// cloudSecretVerb matches the verbs of cloud CLIs that print, mint or
// export credentials: get-access-token, print-identity-token,
// get-login-password, export-credentials, get-authorization-token.
var cloudSecretVerb = regexp.MustCompile(`^(get|print|export|generate|reset|show|download|access|decrypt)-?.*(token|password|credentials?|secret-value|secrets?|access-key|keys?)$|^assume-role`)

// cloudSecretPairs are noun-verb pairs of cloud CLIs that reveal or mint
// secrets (az keyvault secret show, gcloud secrets versions access,
// az storage account keys list, gcloud iam service-accounts keys create).
var cloudSecretPairs = [][2]string{{"secret", "show"}, {"secret", "download"}, {"versions", "access"},
	{"keys", "list"}, {"keys", "create"}, {"credential", "reset"}, {"key", "download"}, {"kms", "decrypt"},
	{"certificate", "download"}, {"sts", "assume-role"}}

// cloudPrintsCredentials reports whether the operands of a cloud CLI
// print or create credentials.
func cloudPrintsCredentials(args []string) bool {
	var ops []string
	for _, a := range args {
		if a == "--expose-token" || a == "--with-decryption" {
			return true
		}
		if !strings.HasPrefix(a, "-") {
			ops = append(ops, strings.ToLower(a))
		}
	}
	for k, o := range ops {
		if cloudSecretVerb.MatchString(o) && !strings.Contains(o, "public") {
			return true
		}
		if k > 0 {
			for _, p := range cloudSecretPairs {
				if ops[k-1] == p[0] && o == p[1] {
					return true
				}
			}
		}
	}
	return false
}

// secretConfigKey matches configuration keys that hold credentials.
var secretConfigKey = regexp.MustCompile(`(?i)credential|token|passw|secret|auth|extraheader`)

// gitConfigReadsSecret reports whether a read of git's configuration
// (--get, --get-all, --get-regexp, --get-urlmatch) asks for keys that hold
// credentials.
func gitConfigReadsSecret(rest []arg) bool {
	get := false
	for _, a := range rest {
		switch {
		case strings.HasPrefix(a.val, "--get"):
			get = true
		case strings.HasPrefix(a.val, "-"):
		case !get && !strings.Contains(a.val, "."):
		case strings.HasSuffix(a.val, ".helper") || strings.HasSuffix(a.val, ".username"):
			// names a helper program or a user, not a credential
		default:
			if secretConfigKey.MatchString(a.val) {
				return true
			}
		}
	}
	return false
}

// secretSamples are names and paths of files that hold credentials, for
// judging glob patterns of file searches (find -name 'id_*').
var secretSamples = []string{"id_rsa", "id_ed25519", "id_ecdsa", "/home/u/.ssh/id_rsa", "/home/u/.ssh/id_ed25519",
	"/home/u/.aws/credentials", "/home/u/.kube/config", "/home/u/.netrc", "/home/u/.git-credentials",
	"/home/u/.docker/config.json", "/home/u/.config/gcloud/credentials.db", "/home/u/.gnupg/private-keys-v1.d/k.key",
	"/home/u/.password-store/a.gpg", "/etc/shadow", "credentials", ".git-credentials", "server.key", "key.pem"}

// secretGlob reports whether a search pattern is a glob (as find reads it:
// * crosses slashes) that matches a file holding credentials. Patterns
// with fewer than three literal characters match nearly anything and say
// nothing of what is looked for.
func secretGlob(pat string) bool {
	if !strings.ContainsAny(pat, "*?[") {
		return false
	}
	literal := 0
	var re strings.Builder
	re.WriteString("^")
	for i := 0; i < len(pat); i++ {
		switch ch := pat[i]; ch {
		case '*':
			re.WriteString(".*")
		case '?':
			re.WriteString(".")
		case '[':
			end := strings.IndexByte(pat[i:], ']')
			if end < 0 {
				return false
			}
			re.WriteString(strings.Replace(pat[i:i+end+1], "[!", "[^", 1))
			i += end
		default:
			literal++
			re.WriteString(regexp.QuoteMeta(string(ch)))
		}
	}
	if literal < 3 {
		return false
	}
	re.WriteString("$")
	rx, err := regexp.Compile(re.String())
	if err != nil {
		return false
	}
	for _, s := range secretSamples {
		if rx.MatchString(s) {
			return true
		}
	}
	return false
}

func hasWord(args []arg, w string) bool {
	for _, a := range args {
		if a.val == w {
			return true
		}
	}
	return false
}

func registerSecretHandlers(reg func(handler, ...string)) {
	reg((*call).secretTool, "gpg", "gpg2", "security", "secret-tool", "pass", "keyctl", "vault", "op", "bw",
		"getent", "unshadow", "john", "hashcat", "mimipenguin", "lazagne", "gcore", "tcpdump", "tshark", "dumpcap",
		"docker-credential-desktop", "docker-credential-pass", "docker-credential-secretservice", "aws", "gcloud", "az",
		"gsutil", "rclone", "s3cmd")
	reg((*call).keyring, "keyring", "kwallet-query", "lssecret", "gopass", "passage")
}

// keyring judges the command-line clients of desktop keyrings and
// password stores: reading an entry prints a secret.
func (c *call) keyring() outcome {
	_, ops := c.split(optSpec{short: "bpf", long: []string{"keyring-backend", "keyring-path", "folder", "wallet"}})
	switch {
	case c.name == "kwallet-query" && !hasWord(c.argv, "-l") && !hasWord(c.argv, "--list-entries"),
		c.name == "lssecret" && (hasWord(c.argv, "-s") || hasWord(c.argv, "--secrets")):
		c.deny("secrets", c.name+" prints stored secrets")
	case len(ops) == 0:
	case ops[0].val == "get" || ops[0].val == "show" || ops[0].val == "cat" || ops[0].val == "otp" || ops[0].val == "export" || ops[0].val == "clip":
		c.deny("secrets", c.name+" "+ops[0].val+" prints a stored secret")
	case c.name != "keyring" && (len(ops) == 1 && !strings.HasPrefix(ops[0].val, "-") && ops[0].val != "ls" && ops[0].val != "list" && ops[0].val != "help" && ops[0].val != "version"):
		c.deny("secrets", c.name+" prints a stored secret")
	}
	return genericScan
}

// secretTool judges tools whose purpose is to read or move credentials,
// and cloud CLIs.
func (c *call) secretTool() outcome {
	args := argTexts(c.argv[1:])
	joined := " " + strings.Join(args, " ") + " "
	switch c.name {
	case "gpg", "gpg2":
		if strings.Contains(joined, "--export-secret") || strings.Contains(joined, "--export-ssh-key") {
			c.deny("secrets", "exports private keys")
		}
	case "security":
		if strings.Contains(joined, "find-generic-password") || strings.Contains(joined, "find-internet-password") || strings.Contains(joined, "dump-keychain") || strings.Contains(joined, "export") {
			c.deny("secrets", "reads the keychain")
		}
	case "secret-tool", "keyctl", "vault", "op", "bw", "docker-credential-desktop", "docker-credential-pass", "docker-credential-secretservice":
		if len(args) == 0 || args[0] == "--help" || args[0] == "version" || args[0] == "--version" || args[0] == "status" {
			return genericScan
		}
		c.deny("secrets", c.name+" reads stored secrets")
	case "pass":
		if len(args) > 0 && (args[0] == "ls" || args[0] == "--help" || args[0] == "version" || args[0] == "init" || args[0] == "git") {
			return genericScan
		}
		c.deny("secrets", "reads the password store")
	case "getent":
		if strings.Contains(joined, " shadow ") || strings.Contains(joined, " gshadow ") {
			c.deny("secrets", "reads password hashes")
		}
	case "unshadow", "john", "hashcat", "mimipenguin", "lazagne":
		c.deny("secrets", c.name+" extracts or cracks passwords")
	case "gcore":
		c.deny("secrets", "dumps process memory")
	case "tcpdump", "tshark", "dumpcap":
		for _, a := range args {
			if a == "-D" || a == "--list-interfaces" || a == "-h" || a == "--version" || a == "-r" {
				return genericScan
			}
		}
		c.deny("secrets", c.name+" captures network traffic")
	case "aws", "gcloud", "az", "gsutil", "rclone", "s3cmd":
		return c.cloud(args, joined)
	}
	return genericScan
}

func (c *call) cloud(args []string, joined string) outcome {
	remote := func(s string) bool {
		return strings.HasPrefix(s, "s3://") || strings.HasPrefix(s, "gs://") || strings.HasPrefix(s, "az://") ||
			strings.HasPrefix(s, "https://") || (c.name == "rclone" && strings.Contains(s, ":") && !strings.HasPrefix(s, "/"))
	}
	switch {
	case strings.Contains(joined, " configure get ") || strings.Contains(joined, " configure export-credentials") ||
		strings.Contains(joined, "get-secret-value") || strings.Contains(joined, "--with-decryption") ||
		strings.Contains(joined, "print-access-token") || strings.Contains(joined, "print-identity-token") ||
		strings.Contains(joined, "get-session-token") || strings.Contains(joined, "create-access-key") ||
		strings.Contains(joined, "keyvault secret show") || strings.Contains(joined, "get-login-password") ||
		strings.Contains(joined, " config show ") && c.name == "rclone", cloudPrintsCredentials(args):
		c.deny("secrets", c.name+" prints cloud credentials")
		return judgedArgs
	}
	for _, a := range args {
		if !strings.HasPrefix(a, "-") && isDestructiveWord(a) || a == "--delete" || a == "--delete-removed" || a == "--delete-after" ||
			c.name == "rclone" && (a == "sync" || a == "dedupe" || a == "cleanup") {
			c.remote(c.name + " " + a + " deletes cloud resources or data")
			break
		}
	}
	var ops []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			ops = append(ops, a)
		}
	}
	// Files go from the operands after the transfer verb to the last one.
	upload := false
	for k, o := range ops {
		switch o {
		case "cp", "sync", "mv", "copy", "move", "put", "upload", "upload-batch", "rsync", "copyto", "moveto", "mput":
		default:
			continue
		}
		xs := ops[k+1:]
		if len(xs) >= 2 && remote(xs[len(xs)-1]) {
			for _, s := range xs[:len(xs)-1] {
				upload = upload || !remote(s)
			}
		}
		if len(xs) == 1 && (o == "put" || o == "upload") && !remote(xs[0]) {
			upload = true
		}
		break
	}
	if upload {
		c.deny("exfiltration", c.name+" uploads local files to cloud storage")
	}
	return judgedArgs
}
