package safety

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Secrets are often found by a search rather than named: find ~ -name
// '*.pem' -exec cat {} +, grep -r password /etc, cat $(locate id_rsa). A
// search for credentials outside the workspace whose results are printed
// or copied reads those credentials.

// secretNameWords are parts of the names of files that hold credentials.
var secretNameWords = []string{"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", ".pem", ".key", ".p12", ".pfx", ".jks",
	"keystore", ".kdbx", ".ovpn", ".env", "credential", "netrc", "pgpass", "git-credentials", "shadow", "secret",
	"passw", "token", "wallet", "htpasswd", ".ppk", ".tfstate", "kubeconfig", "private", ".gpg", "authorized_keys",
	"wp-config", "database.yml", "my.cnf", ".npmrc", ".pypirc", ".s3cfg", ".boto", "settings.php", "config.php",
	"application.properties", "appsettings", "vault"}

// secretName reports whether a file name or name pattern looks for
// credentials.
func secretName(pat string) bool {
	p := strings.ToLower(strings.Trim(pat, `"'`))
	if p == "" || p == "*" {
		return false
	}
	if p == "env" || strings.HasSuffix(p, "/.env") || path.Base(p) == ".env" || strings.HasPrefix(path.Base(p), ".env.") {
		return true
	}
	for _, w := range secretNameWords {
		if strings.Contains(p, w) {
			return true
		}
	}
	return secretGlob(p)
}

// secretTextWords are parts of search patterns that look for credentials
// inside files.
var secretTextWords = []string{"password", "passwd", "secret", "token", "api_key", "apikey", "api-key", "private key",
	"private_key", "begin rsa", "begin openssh", "begin ec", "begin dsa", "begin pgp", "akia", "aws_access",
	"credential", "ghp_", "github_pat", "xox", "sk-", "sk_live", "bearer", "authorization", "passphrase"}

func secretText(pat string) bool {
	p := strings.ToLower(pat)
	for _, opt := range []string{"passwordauthentication", "permitemptypasswords", "kbdinteractive"} {
		p = strings.ReplaceAll(p, opt, "")
	}
	for _, w := range secretTextWords {
		if strings.Contains(p, w) {
			return true
		}
	}
	return false
}

// isPrinter reports whether a command shows or copies the contents of the
// files it is given.
func isPrinter(name string) bool {
	switch name {
	case "cat", "tac", "head", "tail", "less", "more", "most", "bat", "batcat", "strings", "base64", "base32", "basenc",
		"xxd", "od", "hexdump", "hd", "nl", "grep", "egrep", "fgrep", "rg", "ag", "awk", "gawk", "sed", "cut", "sort",
		"uniq", "cp", "mv", "tar", "zip", "7z", "rsync", "scp", "curl", "nc", "ncat", "openssl", "jq", "yq", "vim",
		"vi", "view", "nano", "paste", "column", "pr", "fold", "iconv", "gpg", "ssh-keygen", "sftp", "wget", "mail":
		return true
	}
	return false
}

// outsideWorkspace reports whether a search root lies outside the
// workspace (or cannot be known).
func (c *call) outsideWorkspace(a arg) bool {
	p, ok := c.j.resolve(a, c.sc)
	return !ok || !c.j.inWorkspace(p) && !isTemp(p)
}

// secretHunt records that this command lists files that hold credentials,
// and refuses running a printer on them.
func (c *call) secretHunt(printer []arg) {
	c.ci.secretList = true
	if len(printer) > 0 && isPrinter(baseName(printer[0].val)) {
		c.deny("secrets", "prints the files a search for credentials finds: "+strings.Join(argTexts(printer), " "))
	}
}

// printsFound refuses a printer given the result of a search for
// credentials, through a substitution or a loop variable.
func (c *call) printsFound() {
	if !isPrinter(c.name) {
		return
	}
	for _, a := range c.argv[1:] {
		if a.secret {
			c.deny("secrets", c.name+" prints the files a search for credentials finds")
			return
		}
	}
}

// searchesSecrets reports, from the syntax of a command inside a
// substitution, whether it searches for files holding credentials.
func searchesSecrets(ce *syntax.CallExpr) bool {
	if len(ce.Args) == 0 {
		return false
	}
	var words []string
	for _, w := range ce.Args {
		words = append(words, wordText(w))
	}
	name := baseName(words[0])
	for i, w := range words[1:] {
		switch name {
		case "find":
			if (w == "-name" || w == "-iname" || w == "-path" || w == "-ipath" || w == "-regex" || w == "-wholename") && i+2 < len(words) && secretName(words[i+2]) {
				return true
			}
		case "locate", "plocate", "mlocate", "fd", "fdfind":
			if !strings.HasPrefix(w, "-") && secretName(w) {
				return true
			}
		case "grep", "egrep", "rg", "ag":
			if !strings.HasPrefix(w, "-") && secretText(w) {
				return true
			}
		}
	}
	return false
}

// wordText is the literal text of a word, quotes removed; expansions count
// as nothing.
func wordText(w *syntax.Word) string {
	var sb strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			sb.WriteString(p.Value)
		case *syntax.SglQuoted:
			sb.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					sb.WriteString(l.Value)
				}
			}
		}
	}
	return sb.String()
}

// jq judges jq and yq: the first operand is the program, the others are
// files read (yq -i writes them).
func (c *call) jq() outcome {
	opts, ops := c.split(optSpec{short: "fLeIpo", long: []string{"arg", "argjson", "slurpfile", "rawfile", "from-file", "indent", "args", "jsonargs", "input-format", "output-format", "front-matter", "expression"}})
	if !has(opts, "f", "from-file", "n", "null-input") && len(ops) > 0 {
		ops = ops[1:]
	}
	acc := accRead
	if has(opts, "i", "inplace") {
		acc = accWrite
	}
	for _, o := range ops {
		if acc == accWrite {
			c.checkArg(o, acc)
		} else {
			c.scanOne(o, acc)
		}
	}
	for _, o := range opts {
		if o.name == "slurpfile" || o.name == "rawfile" || o.name == "f" || o.name == "from-file" {
			c.scanOne(o.val, accRead)
		}
	}
	return judgedArgs
}

// locate judges locate and its kin, which list files by name.
func (c *call) locate() outcome {
	_, ops := c.split(optSpec{short: "dln", long: []string{"database", "limit"}})
	for _, o := range ops {
		if secretName(o.val) {
			c.ci.secretList = true
		}
	}
	return genericScan
}

// selfPIDs reports, from the syntax of a command inside a substitution,
// whether it prints the process ids of nanobot: pgrep nanobot, pidof
// nanobot, cat nanobot.pid.
func (j *judge) selfPIDs(ce *syntax.CallExpr) bool {
	if len(ce.Args) < 2 {
		return false
	}
	name := baseName(wordText(ce.Args[0]))
	for _, w := range ce.Args[1:] {
		t := wordText(w)
		for _, n := range j.p.selfNames {
			if !containsWord(t, n) {
				continue
			}
			switch {
			case name == "pgrep" || name == "pidof" || name == "pgrep.exe":
				return true
			case (name == "cat" || name == "head") && strings.HasSuffix(t, ".pid"):
				return true
			}
		}
	}
	return false
}
