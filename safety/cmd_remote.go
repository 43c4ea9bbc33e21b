package safety

import (
	"strings"

	"github.com/nanobot-go/nanobot/internal/lazyre"
)

// Destructive operations sent to other systems through their clients
// (databases, key-value stores, infrastructure and cloud tools) are asked
// about: the filter cannot tell a scratch database from production, the
// owner can.

func registerRemoteHandlers(reg func(handler, ...string)) {
	reg((*call).sqlClient, "psql", "pgcli", "usql", "mysql", "mariadb", "mycli", "clickhouse-client", "clickhouse",
		"sqlcmd", "cqlsh", "snowsql", "trino", "presto", "cockroach", "bq")
	reg((*call).sqliteCmd, "sqlite3", "sqlite", "litecli", "duckdb", "sqlite-utils")
	reg((*call).dbAdmin, "dropdb", "dropuser", "mysqladmin", "mongorestore", "mongoimport", "pg_dropcluster")
	reg((*call).redisCli, "redis-cli", "valkey-cli", "keydb-cli")
	reg((*call).mongoShell, "mongo", "mongosh")
	reg((*call).infra, "terraform", "tofu", "terragrunt", "pulumi", "cdk", "cdktf", "serverless", "sls", "nomad",
		"consul", "etcdctl", "ansible")
	reg((*call).cloudCLI, "doctl", "hcloud", "fly", "flyctl", "heroku", "vercel", "netlify", "linode-cli", "scw",
		"oci", "mc", "b2", "azcopy", "wrangler", "firebase", "supabase", "railway", "ibmcloud", "influx", "kafka-topics",
		"kafka-topics.sh", "rabbitmqctl", "rabbitmqadmin", "pscale", "neonctl", "turso", "databricks", "flyway",
		"liquibase", "rails", "rake", "surge", "gh-pages")
	reg((*call).publisher, "vsce", "ovsx", "goreleaser")
	reg((*call).playbook, "ansible-playbook", "ansible-pull")
}

// playbook asks about running a playbook: it changes the hosts of its
// inventory, which the filter cannot see. Dry runs and listings only look.
func (c *call) playbook() outcome {
	for _, a := range c.argv[1:] {
		switch a.val {
		case "--check", "-C", "--syntax-check", "--list-hosts", "--list-tasks", "--list-tags", "--help", "-h", "--version":
			return genericScan
		}
	}
	c.remote(c.name + " changes the hosts of its inventory")
	return genericScan
}

func (c *call) remote(reason string) { c.ask("remote_destructive", reason) }

// dataPorts are the HTTP ports of data stores, where DELETE drops data.
var dataPorts = map[string]bool{"9200": true, "9300": true, "5984": true, "8086": true, "2379": true, "8500": true,
	"6333": true, "8108": true, "7700": true, "19530": true, "8529": true, "7474": true, "8983": true, "9000": true}

// httpDelete asks about HTTP DELETE requests to anything but a server of
// the workspace on this machine.
func (c *call) httpDelete(targets []string) {
	for _, t := range targets {
		host, port := hostOfTarget(t)
		if host == "" {
			continue
		}
		_, path, _ := strings.Cut(strings.TrimPrefix(t[strings.Index(t, "://")+1:], "/"), "/")
		if c.j.p.classifyHost(host) != destLoopback || dataPorts[port] || strings.Contains(path, "_all") || strings.HasPrefix(path, "*") {
			c.remote("sends an HTTP DELETE to " + host)
			return
		}
	}
}

// optValues returns the values of the given options of the command, in the
// forms -x VALUE, -xVALUE, --long=VALUE and --long VALUE.
func (c *call) optValues(names ...string) []arg {
	var out []arg
	args := c.argv[1:]
	for k := 0; k < len(args); k++ {
		v := args[k].val
		for _, n := range names {
			switch {
			case v == n && k+1 < len(args):
				out = append(out, args[k+1])
			case strings.HasPrefix(n, "--") && strings.HasPrefix(v, n+"="):
				out = append(out, part(args[k], v[len(n)+1:]))
			case !strings.HasPrefix(n, "--") && len(n) == 2 && len(v) > 2 && strings.HasPrefix(v, n) && v[1] != '-':
				out = append(out, part(args[k], v[2:]))
			}
		}
	}
	return out
}

// stdinTexts is the text a command reads on standard input when it is
// known: a here-document, a here-string or the output of echo or printf.
func (c *call) stdinTexts() []string {
	var out []string
	if c.stdinText != nil {
		out = append(out, c.stdinText.val)
	}
	for _, p := range c.in {
		if p.literal {
			out = append(out, p.text)
		}
	}
	return out
}

var (
	reSQLComment = lazyre.New(`(?s)--[^\n]*|/\*.*?\*/`)
	reSQLShell   = lazyre.New(`(?m)(?:^|;)\s*(?:\\!|system\s|\.shell\s|\.system\s)\s*([^\n;]*)`)
)

// sqlStatements splits SQL text into lower-case statements.
func sqlStatements(sql string) []string {
	var out []string
	for _, s := range strings.Split(reSQLComment.ReplaceAllString(sql, " "), ";") {
		if s = strings.Join(strings.Fields(strings.ToLower(s)), " "); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// sqlDestroys returns the first statement of sql that drops, truncates or
// deletes data, or runs a program on the server.
func sqlDestroys(sql string) string {
	for _, s := range sqlStatements(sql) {
		f := strings.Fields(s)
		switch f[0] {
		case "drop", "truncate", "delete", "shutdown":
			return s
		case "alter":
			if strings.Contains(s, " drop ") {
				return s
			}
		case "update":
			if !strings.Contains(s, " where ") {
				return s
			}
		case "copy":
			if strings.Contains(s, " program ") {
				return s
			}
		}
	}
	return ""
}

// sqlWrites reports whether sql changes a database at all; dot-commands of
// the sqlite shell that load data count.
func sqlWrites(sql string) bool {
	for _, line := range strings.Split(sql, "\n") {
		l := strings.TrimSpace(line)
		for _, dot := range []string{".import", ".restore", ".read", ".clone", ".recover"} {
			if strings.HasPrefix(l, dot) {
				return true
			}
		}
	}
	for _, s := range sqlStatements(sql) {
		if strings.HasPrefix(s, ".") {
			continue
		}
		switch strings.Fields(s)[0] {
		case "insert", "update", "delete", "drop", "alter", "create", "replace", "vacuum", "reindex", "truncate",
			"upsert", "merge", "attach", "pragma", "begin", "analyze":
			if strings.HasPrefix(s, "pragma") && !strings.Contains(s, "=") {
				continue
			}
			return true
		}
	}
	return false
}

// sqlShell judges shell escapes in SQL text (psql's \!, mysql's system,
// the sqlite shell's .shell).
func (c *call) sqlShell(sql string) {
	for _, m := range reSQLShell.FindAllStringSubmatch(sql, -1) {
		c.j.nested(c.owner, arg{val: m[1]}, c.sc, c.name+" shell escape")
	}
}

var sqlFlags = map[string][]string{
	"psql": {"-c", "--command"}, "pgcli": {"-c", "--command"}, "usql": {"-c", "--command"},
	"mysql": {"-e", "--execute"}, "mariadb": {"-e", "--execute"}, "mycli": {"-e", "--execute"},
	"clickhouse-client": {"-q", "--query"}, "clickhouse": {"-q", "--query"}, "sqlcmd": {"-q", "-Q", "--query"},
	"cqlsh": {"-e", "--execute"}, "snowsql": {"-q", "--query"}, "trino": {"--execute"}, "presto": {"--execute"},
	"cockroach": {"-e", "--execute"}, "duckdb": {"-c", "-cmd"}, "sqlite3": {"-cmd"}, "sqlite": {"-cmd"}, "litecli": {"-e", "--execute"},
}

// sqlTexts collects the SQL a client runs: option values, standard input
// and, for bq, the query operand.
func (c *call) sqlTexts() []string {
	var out []string
	for _, a := range c.optValues(sqlFlags[c.name]...) {
		out = append(out, a.val)
	}
	return append(out, c.stdinTexts()...)
}

func (c *call) sqlClient() outcome {
	texts := c.sqlTexts()
	if c.name == "bq" {
		_, ops := c.split(optSpec{long: []string{"project_id", "location", "format", "dataset_id"}})
		if len(ops) > 0 {
			switch ops[0].val {
			case "rm", "truncate":
				c.remote("bq " + ops[0].val + " deletes BigQuery data")
			case "query":
				for _, o := range ops[1:] {
					texts = append(texts, o.val)
				}
			}
		}
	}
	for _, t := range texts {
		c.sqlShell(t)
		if s := sqlDestroys(t); s != "" {
			c.remote(c.name + " runs a destructive statement: " + clip(s, 60))
			return genericScan
		}
	}
	return genericScan
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// sqliteCmd judges the sqlite shell and its kin: changing a database file
// outside the workspace is writing to that file.
func (c *call) sqliteCmd() outcome {
	spec := optSpec{short: "", long: []string{"cmd", "init", "separator", "nullvalue", "newline", "mode", "vfs", "lookaside", "pagecache", "heap", "mmap", "maxsize", "zip"}}
	opts, ops := c.split(spec)
	var sql []string
	if c.name == "sqlite-utils" && len(ops) > 1 {
		verb := ops[0].val
		ops = ops[1:]
		switch verb {
		case "query", "memory":
			if len(ops) > 1 {
				sql = append(sql, ops[1].val)
			}
		case "tables", "views", "rows", "schema", "indexes", "triggers", "search", "analyze-tables", "dump":
		default:
			sql = append(sql, "insert") // every other verb changes the database
		}
		ops = ops[:1]
	}
	for _, o := range opts {
		if o.name == "cmd" {
			sql = append(sql, o.val.val)
		}
	}
	if len(ops) == 0 {
		return judgedArgs
	}
	db := ops[0]
	for _, o := range ops[1:] {
		sql = append(sql, o.val)
	}
	sql = append(sql, c.stdinTexts()...)
	writes := false
	for _, s := range sql {
		c.sqlShell(s)
		writes = writes || sqlWrites(s)
		for _, line := range strings.Split(s, "\n") {
			if f := strings.Fields(line); len(f) > 1 && (f[0] == ".output" || f[0] == ".once" || f[0] == ".save" || f[0] == ".backup") {
				c.checkArg(arg{val: f[len(f)-1]}, accWrite)
			}
		}
	}
	if db.val == ":memory:" || db.val == "" {
		return judgedArgs
	}
	if writes && c.stdinFile == "" {
		c.checkArg(db, accWrite)
		return judgedArgs
	}
	c.scanOne(db, accRead)
	return judgedArgs
}

func (c *call) dbAdmin() outcome {
	joined := " " + strings.Join(argTexts(c.argv[1:]), " ") + " "
	switch c.name {
	case "dropdb", "dropuser", "pg_dropcluster":
		c.remote(c.name + " deletes a database or role")
	case "mysqladmin":
		for _, w := range []string{" drop ", " shutdown ", " flush-", " kill ", " password ", " purge "} {
			if strings.Contains(joined, w) {
				c.remote("mysqladmin" + strings.TrimRight(w, " ") + " changes the database server")
				return genericScan
			}
		}
	case "mongorestore", "mongoimport":
		if strings.Contains(joined, " --drop ") || strings.Contains(joined, " --mode=delete") || strings.Contains(joined, " --mode delete") {
			c.remote(c.name + " --drop replaces existing collections")
		}
	}
	return genericScan
}

// redisDestructive are the commands of Redis and its forks that delete data
// or reconfigure the server.
var redisDestructive = map[string]bool{"flushall": true, "flushdb": true, "del": true, "unlink": true, "config": true,
	"shutdown": true, "debug": true, "script": true, "function": true, "slaveof": true, "replicaof": true,
	"migrate": true, "cluster": true, "acl": true, "module": true, "swapdb": true, "failover": true}

var reRedisCall = lazyre.New(`(?i)redis\.p?call\(\s*['"](\w+)`)

func (c *call) redisCli() outcome {
	_, ops := c.split(optSpec{short: "hpsaunridc", long: []string{"user", "pass", "askpass", "tls", "cacert", "cacertdir",
		"cert", "key", "sni", "pattern", "count", "eval", "rdb", "functions-rdb", "replica", "pipe-timeout", "memkeys-samples", "hotkeys", "intrinsic-latency"}})
	var cmds [][]string
	if len(ops) > 0 {
		cmds = append(cmds, argTexts(ops))
	}
	for _, t := range c.stdinTexts() {
		for _, line := range strings.Split(t, "\n") {
			if f := strings.Fields(line); len(f) > 0 {
				cmds = append(cmds, f)
			}
		}
	}
	for _, f := range cmds {
		verb := strings.ToLower(f[0])
		if redisDestructive[verb] && !(verb == "config" && len(f) > 1 && strings.EqualFold(f[1], "get")) {
			c.remote(c.name + " " + verb + " deletes data or reconfigures the server")
			return judgedArgs
		}
		if verb == "eval" || verb == "evalsha" || verb == "fcall" {
			for _, m := range reRedisCall.FindAllStringSubmatch(strings.Join(f, " "), -1) {
				if redisDestructive[strings.ToLower(m[1])] {
					c.remote(c.name + " runs a script that deletes data")
					return judgedArgs
				}
			}
		}
	}
	return judgedArgs
}

var reMongoDestroy = lazyre.New(`\.drop\(|dropDatabase|deleteMany|deleteOne|\.remove\(|dropUser|dropAllUsers|dropIndex|renameCollection|shutdownServer|shutdown\s*:|findOneAndDelete|findAndModify\([^)]*remove|updateMany\(\s*\{\s*\}`)

func (c *call) mongoShell() outcome {
	texts := c.stdinTexts()
	for _, a := range c.optValues("--eval") {
		texts = append(texts, a.val)
	}
	for _, t := range texts {
		if reMongoDestroy.MatchString(t) {
			c.remote(c.name + " runs a command that deletes data")
			return genericScan
		}
	}
	return genericScan
}

// infra judges infrastructure tools: plans and reads run, changes to
// real infrastructure are asked about.
func (c *call) infra() outcome {
	_, ops := c.split(optSpec{short: "", long: []string{"chdir", "stack", "cwd", "var", "var-file", "target", "endpoints", "address", "token", "namespace", "region", "profile", "stage"}})
	words := argTexts(ops)
	if len(words) == 0 {
		return judgedArgs
	}
	verb := words[0]
	sub := ""
	if len(words) > 1 {
		sub = words[1]
	}
	joined := " " + strings.Join(argTexts(c.argv[1:]), " ") + " "
	switch c.name {
	case "terraform", "tofu", "terragrunt", "cdktf":
		if verb == "run-all" || verb == "run" {
			verb, sub = sub, ""
		}
		switch verb {
		case "destroy", "apply", "import", "taint", "untaint", "force-unlock", "deploy":
			c.remote(c.name + " " + verb + " changes real infrastructure")
		case "state":
			if sub == "rm" || sub == "mv" || sub == "push" || sub == "replace-provider" {
				c.remote(c.name + " state " + sub + " rewrites the infrastructure state")
			}
		case "workspace":
			if sub == "delete" {
				c.remote(c.name + " workspace delete")
			}
		}
	case "pulumi":
		switch verb {
		case "destroy", "up", "update", "import", "cancel", "refresh":
			c.remote("pulumi " + verb + " changes real infrastructure")
		case "stack", "state":
			if sub == "rm" || sub == "delete" || sub == "unprotect" {
				c.remote("pulumi " + verb + " " + sub + " deletes infrastructure state")
			}
		}
	case "cdk", "serverless", "sls":
		switch verb {
		case "destroy", "deploy", "remove", "rollback":
			c.remote(c.name + " " + verb + " changes real infrastructure")
		}
	case "nomad":
		if (verb == "job" && (sub == "stop" || sub == "run" || sub == "revert")) || (verb == "system" && sub == "gc") || verb == "stop" || (verb == "node" && sub == "drain") {
			c.remote("nomad " + verb + " " + sub + " changes the cluster")
		}
	case "consul":
		if strings.Contains(joined, " delete ") || verb == "leave" || strings.Contains(joined, " force-leave ") {
			c.remote("consul " + verb + " deletes cluster data")
		}
	case "etcdctl":
		if verb == "del" || verb == "defrag" || verb == "compact" || (verb == "member" && sub == "remove") || verb == "snapshot" && sub == "restore" {
			c.remote("etcdctl " + verb + " deletes cluster data")
		}
	case "ansible":
		c.ansible()
	}
	return judgedArgs
}

// ansible judges ad-hoc commands as if they ran here.
func (c *call) ansible() {
	module := "command"
	for _, m := range c.optValues("-m", "--module-name") {
		module = m.val
	}
	for _, a := range c.optValues("-a", "--args") {
		switch module {
		case "shell", "command", "raw", "ansible.builtin.shell", "ansible.builtin.command", "ansible.builtin.raw":
			c.j.nested(c.owner, a, c.sc, "ansible "+module)
		default:
			if strings.Contains(a.val, "state=absent") {
				c.remote("ansible " + module + " removes things on remote hosts")
			}
		}
	}
}

// isDestructiveWord reports whether a subcommand deletes or destroys.
func isDestructiveWord(w string) bool {
	w = strings.ToLower(w)
	switch w {
	case "delete", "destroy", "rm", "rb", "remove", "purge", "terminate", "rmdir", "rmdirs", "deletefile", "drop", "wipe",
		"nuke", "del", "reset", "truncate", "dropall", "drop-all", "teardown":
		return true
	}
	for _, s := range []string{"delete-", "-delete", ":destroy", ":delete", ":remove", ":reset", ":drop", ":purge", ":fresh",
		"terminate-", "destroy-", "remove-", "-destroy", "delete_", "purge_", "drop_"} {
		if strings.HasPrefix(w, s) || strings.HasSuffix(w, s) {
			return true
		}
	}
	return false
}

// publisher judges release tools: publishing is asked about, local
// snapshots are not.
func (c *call) publisher() outcome {
	joined := " " + strings.Join(argTexts(c.argv[1:]), " ") + " "
	if strings.Contains(joined, " publish ") || c.name == "goreleaser" && strings.Contains(joined, " release ") && !strings.Contains(joined, "--snapshot") {
		c.ask("publish", c.name+" publishes a release")
	}
	return genericScan
}

func (c *call) cloudCLI() outcome {
	for _, a := range c.argv[1:] {
		if a.val == "deploy" || a.val == "publish" || c.name == "surge" || c.name == "gh-pages" {
			c.ask("publish", c.name+" publishes a site or service")
			return judgedArgs
		}
		if c.name == "flyway" && a.val == "clean" {
			c.remote("flyway clean drops every object of the database")
			return judgedArgs
		}
		if !strings.HasPrefix(a.val, "-") && isDestructiveWord(a.val) || a.val == "--delete" || a.val == "--remove" {
			c.remote(c.name + " " + a.val + " deletes cloud resources")
			return judgedArgs
		}
	}
	if c.name == "mc" && len(c.argv) > 1 && (c.argv[1].val == "mirror" && strings.Contains(strings.Join(argTexts(c.argv), " "), "--remove")) {
		c.remote("mc mirror --remove deletes objects")
	}
	return judgedArgs
}
