package safety

import (
	"path"
	"strings"

	"github.com/nanobot-go/nanobot/internal/lazyre"
)

var (
	reStrLit     = lazyre.New(`"((?:[^"\\\n]|\\.)*)"|'((?:[^'\\\n]|\\.)*)'`)
	reBacktick   = lazyre.New("`([^`]*)`")
	reQx         = lazyre.New(`qx\s*[{(/|]([^})/|]*)[})/|]|%x[{(]([^})]*)[})]`)
	reExecCall   = lazyre.New(`\b(os\.system|os\.popen|popen[234]?|subprocess\.\w+|check_output|check_call|Popen|os\.exec\w*|os\.spawn\w*|pty\.spawn|commands\.getoutput|system|exec|execSync|execFileSync|spawn|spawnSync|execFile|shell_exec|passthru|proc_open|pcntl_exec|IO\.popen|Open3\.\w+|Process\.Start|Runtime\.getRuntime|Start-Process|Invoke-Expression|os\.execute|io\.popen|os:cmd|System\.cmd|System\.shell|Port\.open|Process\.(?:run|new|spawn)|shell-command|call-process|start-process|process-lines|async-shell-command|make-process|callCommand|callProcess|readProcess|system2|Deno\.run|Deno\.Command|Bun\.spawn(?:Sync)?|ProcessBuilder|shell/sh|sh/sh|babashka\.process/\w+|do shell script)\s*[\[\x60'"(]|\.execute\(\)|\bexec\s+[\w/]|\b(?:run|read|pipeline|success)\(\x60`)
	reSocket     = lazyre.New(`(?i)socket|fsockopen|TCPSocket|net\.connect|net\.Socket|createConnection|IO::Socket|Net::TCP|new-object\s+system\.net\.sockets|socat|/dev/tcp|ztcp|gen_tcp|tcp-connect|Deno\.connect|Bun\.connect|java\.net\.Socket|new\s+Socket\(|make-network-process|open-network-stream|\[socket\s|require\(\s*['"](?:node:)?(?:net|tls|dgram)['"]\s*\)|import\s+socket|from\s+socket\s+import|using\s+Sockets|Sockets\.connect|IO::Socket`)
	reConnect    = lazyre.New(`(?i)connect|fsockopen|TCPSocket\.(new|open)|createConnection|IO::Socket::INET|PeerAddr|TCPClient|ztcp|new\s+Socket\(|make-network-process|open-network-stream|\[socket\s|require\(\s*['"](?:node:)?(?:net|tls|dgram)['"]\s*\)|import\s+socket|from\s+socket\s+import|using\s+Sockets|Sockets\.connect|IO::Socket`)
	reShellish   = lazyre.New(`(?i)dup2|pty\.spawn|/bin/(ba|z|da|k)?sh|cmd\.exe|subprocess|child_process|spawn|\bexec\b|exec\(|system\(|popen|proc_open|shell_exec|passthru|STDIN|STDOUT|open\(STDIN|\.pipe\(|powershell|IEX|Invoke-Expression|os\.execute|io\.popen|System\.cmd|Port\.open|:os\.cmd|Deno\.(run|Command)|Bun\.spawn|ProcessBuilder|shell-command|start-process|\bsh\s+-c\b|\x60[^\x60]*\bsh\b`)
	reFetch      = lazyre.New(`(?i)urlopen|urllib|requests\.(get|post)|http\.client|httplib|LWP|get\(\s*['"]https?:|getstore|file_get_contents\(\s*['"]https?|open-uri|URI\.open|Net::HTTP|fetch\(|https?\.get|curl_exec|DownloadString|DownloadFile|Invoke-WebRequest|iwr |Invoke-RestMethod|irm |WebClient|http\.request|\bget\s+['"]https?:|\bcurl\s|\bwget\s`)
	reEvalExec   = lazyre.New(`(?i)\bexec\s*\(|\beval\s*\(|\beval\b|system\s*\(|popen|subprocess|spawn|instance_eval|runInThisContext|new\s+Function|Function\(|\bassert\s*\(|Invoke-Expression|\biex\b|include\s*\(|require\s*\(\s*['"]https?|\.write\(.*\)\s*;.*chmod|\bload(?:string)?\s*\(|\bdofile\s*\(`)
	reDecode     = lazyre.New(`(?i)b64decode|base64|decode\(|fromCharCode|atob\(|Buffer\.from\([^)]*(base64|hex)|pack\(|unhexlify|rot13|codecs\.|zlib\.decompress|marshal\.loads|gzinflate|gzuncompress|str_rot13|bytes\.fromhex|\\x[0-9a-f]{2}.*\\x[0-9a-f]{2}.*\\x[0-9a-f]{2}|chr\(\d+\)\s*[+.]\s*chr\(|FromBase64String|unpack\(|map\s*\(?\s*['"]?chr\b|chr\(\s*\w+\s*\)\s*for\s|\(&:chr\)|\.chr\s*\}|sprintf\(\s*['"](?:%c)+|\[char\]\s*\d|\.fromCodePoint\(`)
	reNetSend    = lazyre.New(`(?i)requests\.(post|put)|urlopen\([^)]*data|http\.client|httplib|\.sendall?\(|Net::HTTP\.post|post_form|method\s*:\s*['"](POST|PUT)|fetch\([^)]*POST|curl_exec|smtplib|ftplib|\.request\(|axios\.(post|put)|LWP.*post|HTTP::Request|paramiko|\.storbinary|UploadFile|UploadString|Invoke-WebRequest.*-Method\s+Post|Invoke-RestMethod.*-Method\s+Post|\.write\(\s*\w*sock|sock\w*\.(write|send)|socket.*\.(write|send)|Socket.*\.write|print\s+\$sock|syswrite`)
	reLocalReads = lazyre.New(`(?i)environ|ENV\[|ENV\{|%ENV|process\.env|getenv|open\(|\.read\(|readFile|File\.read|file_get_contents|/etc/|\.ssh|Get-Content|\$env:|glob\(|os\.walk|listdir|readdir`)
	reEnvDump    = lazyre.New(`os\.environ\s*(\)|$|;|,|\.items|\.copy|\.keys|\.values)|dict\(\s*os\.environ|print\s*\(?\s*os\.environ\s*\)?\s*$|process\.env\s*(\)|$|;|,)|JSON\.stringify\(\s*process\.env\s*\)|%ENV\b|\bENV\.(to_h|to_a|each|inspect|keys|map|select|sort)|\bp\s+ENV\b|puts\s+ENV\s*($|;)|getenv\(\s*\)|\$_ENV\b|\$_SERVER\b|Get-ChildItem\s+env:|\bgci\s+env:|\bls\s+env:|os\.Environ\(\)`)
	reDelete     = lazyre.New(`(?i)rmtree|rmdir|\bremove\(|unlink|rm_rf|rm_r|rmSync|rimraf|removedirs|\bdelete\b|FileUtils\.rm|File\.delete|os\.remove|\.unlink\(|fs\.rm|unlinkSync|rmdirSync|Remove-Item|\brm\s+-rf|truncate\(|shred|\brm\(|file\s+delete|File\.rm|delete-directory|delete-file|Deno\.remove|removeSync|Files\.delete|deleteRecursively|FileUtils\.(?:delete|remove|forceDelete)|file\.remove|remove_dir_all|remove_file|RemoveAll|fs/delete|remove_tree`)
	reWriteMode  = lazyre.New(`^\s*,\s*['"](w|a|wb|ab|w\+|a\+|r\+|wt|at)['"]|^\s*,\s*(flags\s*[:=]\s*)?['"]a['"]|^\s*,\s*File::(WRONLY|APPEND)|^\s*,\s*os\.O_(WRONLY|RDWR|APPEND)|^\s*,\s*['"]>>?['"]|^['"]?\s*\)\s*\.\s*(write_text|write_bytes|open\(\s*['"][wa])`)
	reWriteFunc  = lazyre.New(`(?i)(writeFile|appendFile|writeFileSync|appendFileSync|file_put_contents|File\.write|IO\.write|write_text|write_bytes|symlink|copyfile|copy2?|shutil\.copy|shutil\.move|rename|Set-Content|Add-Content|Out-File|createWriteStream|chmod|chown)\s*\(?\s*$`)
	reForkLoop   = lazyre.New(`(?i)(while|for|loop|until)[^\n]{0,40}fork|fork[^\n]{0,20}(while|for|loop)|fork\(\)\s*(&&|\|\|)|forkbomb|Thread\(target=[^)]*\)\.start\(\)[^\n]*while\s+True|while\s*(True|1|\(1\)|\(true\))\s*:?\s*[^\n]{0,40}(fork|Popen|spawn|Thread)`)
	reKillInit   = lazyre.New(`(?i)kill\s*\(?\s*-?1\s*,|kill\s*\(?\s*['"]?(KILL|9|TERM|SIGKILL|-9)['"]?\s*,\s*-?1\b|\.kill\(\s*-?1\b|Process\.kill\([^)]*,\s*-?1\s*\)|posix_kill\(\s*-?1\b`)
	reSetuid     = lazyre.New(`(?i)set(e|r|res)?uid\(\s*0\s*\)|set(e|r|res)?gid\(\s*0\s*\)|POSIX::setuid\(\s*0|Process::Sys\.setuid\(\s*0|posix_setuid\(\s*0|\$<\s*=\s*0|\$>\s*=\s*0`)
	reListen     = lazyre.New(`(?i)\.listen\(|\bbind\(|HTTPServer|TCPServer|socketserver|http\.server|SimpleHTTPServer|createServer|WEBrick|TCPServer\.new|IO::Socket::INET.*Listen|stream_socket_server|serve_forever|app\.run\(|uvicorn\.run|Listen\s*=>|HttpListener`)
	reHomeRef    = lazyre.New(`(?i)expanduser\(\s*['"]~['"]\s*\)|Path\.home\(\)|os\.homedir\(\)|Dir\.home|environ\[\s*['"]HOME['"]\s*\]|getenv\(\s*['"]HOME['"]\s*\)|process\.env\.HOME|ENV\[\s*['"]HOME['"]\s*\]|\$ENV\{\s*['"]?HOME['"]?\s*\}|\$HOME|\$env:USERPROFILE|homedir\(\)|home-dir|Sys\.getenv\(\s*['"]HOME|path\.expand\(\s*['"]~|System\.user_home|get_env\(\s*"HOME"|\$(?:::)?env\(HOME\)|Deno\.env\.get\(\s*['"]HOME|Bun\.env\.HOME|\(getenv\s+"HOME"\)|user\.home|\$env:HOME|\bhome\(\)`)
	rePowerCall  = lazyre.New(`(?i)\breboot\(|os\.reboot|LINUX_REBOOT|RB_AUTOBOOT|RB_POWER_OFF|Stop-Computer|Restart-Computer`)
)

// judgeCode judges an interpreter program given as text.
func (c *call) judgeCode(lang string, a arg) {
	code := a.val
	switch {
	case a.fetch:
		c.deny("download_exec", lang+" runs code downloaded at run time")
		return
	case a.decode:
		c.deny("obfuscation", lang+" runs decoded code")
		return
	case strings.TrimSpace(strings.ReplaceAll(code, unknownMark, "")) == "" && strings.Contains(code, unknownMark):
		c.deny("obfuscation", lang+" program text is only known at run time")
		return
	}
	switch lang {
	case "pwsh", "osascript":
		// Close enough to a shell for the commands it names.
		c.j.lenient(c.owner, rePwshRemove.ReplaceAllString(code, "${1}rm "), c.sc)
	case "tclsh":
		c.tclCommands(code)
	}
	t := codeText{code: code, lower: strings.ToLower(code)}
	execCtx := reExecCall.MatchString(code)
	deletes := c.codePatterns(lang, t, execCtx)
	c.codeShellCommands(lang, code, execCtx)
	texts := c.codeLiterals(code, execCtx, deletes)
	if t.mentions("http", "url", "sock", "connect", "fetch", "request", "tcp", "curl", "wget", "get(", "docker") {
		c.judgeCodeDests(lang, code, texts)
	}
	if t.mentions("sqlite", "database", "duckdb") {
		c.codeDatabases(code, texts)
	}
	c.codeExhaustion(lang, code)
}

// codeText is a program's text. Cheap keyword tests on it decide which of
// the costlier patterns can match.
type codeText struct {
	code  string
	lower string // code in lower case
}

// mentions reports whether the text contains one of the lower-case words.
func (t codeText) mentions(words ...string) bool {
	for _, w := range words {
		if strings.Contains(t.lower, w) {
			return true
		}
	}
	return false
}

// match reports whether the text mentions one of the words and matches re.
func (t codeText) match(re *lazyre.Regexp, words ...string) bool {
	return t.mentions(words...) && re.MatchString(t.code)
}

// codePatterns judges a program by the patterns of what it does; it reports
// whether the program deletes files.
func (c *call) codePatterns(lang string, t codeText, execCtx bool) (deletes bool) {
	code := t.code
	hasSocket := t.match(reSocket, "sock", "tcp", "net", "connect", "socat")
	connects := hasSocket && reConnect.MatchString(code)
	evalExec := t.match(reEvalExec, "exec", "eval", "system", "popen", "spawn", "subprocess", "function", "assert", "iex", "invoke", "include", "require", "runin")
	switch {
	case connects && reShellish.MatchString(code):
		c.deny("reverse_shell", lang+" connects a shell to the network")
	case evalExec && t.match(reFetch, "url", "http", "lwp", "get", "fetch", "webclient", "download", "iwr", "irm", "curl"):
		c.deny("download_exec", lang+" downloads code and runs it")
	case (evalExec || execCtx) && reDecode.MatchString(code):
		// Decoded text handed to eval or to a command runner alike.
		c.deny("obfuscation", lang+" decodes a hidden program and runs it")
	}
	if t.match(reNetSend, "post", "put", "send", "request", "http", "smtp", "ftp", "sock", "upload", "paramiko", "storbinary", "write") && reLocalReads.MatchString(code) {
		c.deny("exfiltration", lang+" sends local data or the environment to the network")
	}
	if t.match(reEnvDump, "env", "_server") {
		c.deny("secrets", lang+" prints the process environment")
	}
	if t.match(reForkLoop, "fork", "spawn", "thread", "popen") {
		c.deny("resource_exhaustion", lang+" forks in a loop")
	}
	if t.match(reKillInit, "kill") {
		c.deny("services", lang+" kills init or every process")
	}
	if t.match(reSetuid, "uid", "gid", "$<", "$>") {
		c.deny("privilege", lang+" switches to root")
	}
	if t.mentions("sysrq-trigger") || t.match(rePowerCall, "reboot", "computer") {
		c.deny("power", lang+" reboots or powers off the machine")
	}
	if t.match(reListen, "listen", "bind", "server", "serve", "webrick", "app.run", "uvicorn") && !connects {
		c.ask("network_listener", lang+" starts a network server")
	}
	deletes = t.match(reDelete, "rm", "remove", "unlink", "delete", "truncate", "shred", "rimraf")
	if deletes && reHomeRef.MatchString(code) {
		c.deny("destroy_data", lang+" deletes files in the home directory")
	}
	return deletes
}

// codeShellCommands judges the commands a program runs through a shell in
// backticks or qx.
func (c *call) codeShellCommands(lang, code string, execCtx bool) {
	if !execCtx && lang != "perl" && lang != "ruby" && lang != "php" {
		return
	}
	for _, m := range reBacktick.FindAllStringSubmatch(code, -1) {
		if lang != "node" {
			c.j.lenient(c.owner, strings.ReplaceAll(m[1], "$(homedir())", "$HOME"), c.sc)
		}
	}
	for _, m := range reQx.FindAllStringSubmatch(code, -1) {
		c.j.lenient(c.owner, m[1]+m[2], c.sc)
	}
}

// codeLiterals judges the string literals of a program: as commands when
// it runs commands, and as paths. It returns their texts.
func (c *call) codeLiterals(code string, execCtx, deletes bool) []string {
	lits := reStrLit.FindAllStringSubmatchIndex(code, -1)
	var joined, texts []string
	for _, m := range lits {
		var s string
		if m[2] >= 0 {
			s = code[m[2]:m[3]]
		} else {
			s = code[m[4]:m[5]]
		}
		s = unescapeCode(s)
		texts = append(texts, s)
		if execCtx {
			c.j.lenient(c.owner, s, c.sc)
			joined = append(joined, s)
		}
		c.codePath(s, code[m[1]:], code[:m[0]], deletes)
	}
	if execCtx && len(joined) > 1 {
		c.j.lenient(c.owner, strings.Join(joined, " "), c.sc)
	}
	return texts
}

// codePath judges a string literal of a program that names a path.
func (c *call) codePath(s, after, before string, deletes bool) {
	if s == "" || strings.ContainsAny(s, " \n\t") && !strings.HasPrefix(s, "/") {
		return
	}
	if !(strings.HasPrefix(s, "/") || strings.HasPrefix(s, "~") || strings.HasPrefix(s, "..")) {
		return
	}
	if strings.HasPrefix(s, "~") {
		s = c.j.tilde(s)
	}
	if strings.Contains(s, unknownMark) {
		return
	}
	p, ok := c.j.resolve(arg{val: s}, c.sc)
	if !ok {
		return
	}
	if strings.HasPrefix(p, "/dev/tcp/") || strings.HasPrefix(p, "/dev/udp/") {
		c.deny("reverse_shell", "program opens a network socket through "+p)
		return
	}
	tail := before
	if len(tail) > 40 {
		tail = tail[len(tail)-40:]
	}
	write := reWriteMode.MatchString(after) || reWriteFunc.MatchString(tail) ||
		strings.HasPrefix(s, ">") || strings.HasSuffix(strings.TrimSpace(tail), ">>") || strings.HasSuffix(strings.TrimSpace(tail), ">")
	switch {
	case deletes && c.j.classifyDeleteCat(p) != "":
		cat, reason := c.j.classify(p, accDelete)
		c.deny(cat, "program "+reason)
	case write:
		if cat, reason := c.j.classify(p, accCreate); cat != "" {
			c.deny(cat, "program "+reason)
		}
	default:
		if cat, reason := c.j.classify(p, accRead); cat != "" {
			c.deny(cat, "program "+reason)
		}
	}
}

var (
	rePwshRemove = lazyre.New(`(?i)(^|[;|&{(]\s*)(?:Remove-Item|ri|rd|del|erase)\s`)
	reTclSplit   = lazyre.New(`[;\n\[\]{}]`)
	reTclSend    = lazyre.New(`\bsend\s+(?:-\S+\s+)*"((?:[^"\\]|\\.)*)"`)
	reTclOpen    = lazyre.New(`\bopen\s+"?\|([^"\]]*)`)
	reTclSocket  = lazyre.New(`\bsocket\s+(?:-\S+\s+)*([^\s\]]+)\s+(\d+)`)
	reTclFile    = lazyre.New(`^\s*file\s+(delete|rename|copy|mkdir)\b`)
)

// tclCommands judges Tcl and expect programs: each command is close
// enough to a shell command, with file delete, spawn, send and open "|...".
func (c *call) tclCommands(code string) {
	for _, cmd := range reTclSplit.Split(code, -1) {
		cmd = strings.TrimSpace(cmd)
		if m := reTclFile.FindStringSubmatch(cmd); m != nil {
			cmd = map[string]string{"delete": "rm", "rename": "mv", "copy": "cp", "mkdir": "mkdir"}[m[1]] + cmd[len(m[0]):]
		}
		cmd = strings.TrimPrefix(strings.TrimPrefix(cmd, "spawn "), "-noecho ")
		c.j.lenient(c.owner, cmd, c.sc)
	}
	for _, m := range reTclSend.FindAllStringSubmatch(code, -1) {
		c.j.lenient(c.owner, decodeANSIC(m[1]), c.sc)
	}
	for _, m := range reTclOpen.FindAllStringSubmatch(code, -1) {
		c.j.lenient(c.owner, m[1], c.sc)
	}
	for _, m := range reTclSocket.FindAllStringSubmatch(code, -1) {
		c.judgeDest(m[1], m[2], "tclsh")
	}
}

var reSQLiteOpen = lazyre.New(`sqlite3?\.connect|new\s+(?:sqlite3\.)?Database\(|SQLite3::Database|dbi:SQLite|better-sqlite3|sqlite:\/\/|DuckDB|duckdb\.connect`)

// codeDatabases treats the database files a program opens and changes
// with SQL as files it writes.
func (c *call) codeDatabases(code string, texts []string) {
	if !reSQLiteOpen.MatchString(code) {
		return
	}
	writes := false
	for _, t := range texts {
		writes = writes || sqlWrites(t)
	}
	if !writes {
		return
	}
	for _, t := range texts {
		t = strings.TrimPrefix(strings.TrimPrefix(t, "dbi:SQLite:dbname="), "sqlite:///")
		if isDatabaseFile(t) && (strings.HasPrefix(t, "/") || strings.HasPrefix(t, "~") || strings.HasPrefix(t, "..")) {
			if strings.HasPrefix(t, "~") {
				t = c.j.tilde(t)
			}
			if p, ok := c.j.resolve(arg{val: t}, c.sc); ok {
				if cat, reason := c.j.classify(p, accWrite); cat != "" {
					c.deny(cat, "program changes a database: "+reason)
				}
			}
		}
	}
}

// isDatabaseFile reports whether a name is an SQLite database by its
// extension.
func isDatabaseFile(p string) bool {
	switch strings.ToLower(path.Ext(p)) {
	case ".db", ".sqlite", ".sqlite3", ".db3", ".sdb", ".duckdb":
		return true
	}
	return false
}

func (j *judge) classifyDeleteCat(p string) string {
	cat, _ := j.classify(p, accDelete)
	return cat
}

// lenient judges a string from a program as a shell command, ignoring
// strings that are not valid shell at all.
func (j *judge) lenient(owner int, s string, sc *scope) {
	if strings.TrimSpace(s) == "" || j.depth > maxDepth {
		return
	}
	sub := &judge{p: j.p, owners: j.owners + 1000, depth: j.depth + 1, calls: j.calls}
	sub.script(strings.ReplaceAll(s, unknownMark, "${__unknown}"), sc.child())
	j.calls = sub.calls
	for _, f := range sub.findings {
		if f.category == "unparsable" {
			continue
		}
		if f.category == "obfuscation" && (strings.HasPrefix(f.reason, "command name") || f.reason == "empty command name") {
			continue
		}
		f.owner = owner
		j.findings = append(j.findings, f)
	}
}

func unescapeCode(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	return decodeANSIC(s)
}
