package safety

import (
	"strconv"
	"strings"

	"github.com/nanobot-go/nanobot/internal/lazyre"
)

// hugeSize is the size from which creating a file counts as filling the disk.
const hugeSize = 10 << 30

func registerFileHandlers(reg func(func(*call), ...string)) {
	reg((*call).rm, "rm", "unlink", "shred", "srm", "wipe")
	reg((*call).rmdir, "rmdir")
	reg((*call).cp, "cp")
	reg((*call).mv, "mv")
	reg((*call).ln, "ln")
	reg((*call).install, "install")
	reg((*call).dd, "dd")
	reg((*call).tee, "tee")
	reg((*call).touch, "touch")
	reg((*call).mkdir, "mkdir")
	reg((*call).truncate, "truncate")
	reg((*call).fallocate, "fallocate")
	reg((*call).chmod, "chmod")
	reg((*call).chown, "chown", "chgrp")
	reg((*call).setfacl, "setfacl", "chattr")
	reg((*call).tar, "tar", "bsdtar")
	reg((*call).zip, "zip", "7z", "7za", "rar")
	reg((*call).unzip, "unzip")
	reg((*call).yes, "yes")
	reg((*call).catLike, "cat", "head", "tail", "tac", "pv")
	reg((*call).editor, "nano", "pico", "joe", "mcedit", "micro", "kak", "hx", "mg", "jed")
	reg((*call).disk, "mkfs", "mke2fs", "mkswap", "wipefs", "blkdiscard", "sfdisk", "gdisk", "sgdisk", "cfdisk",
		"fdisk", "parted", "badblocks", "hdparm", "mdadm", "cryptsetup", "lvremove", "vgremove", "pvremove", "lvcreate",
		"vgcreate", "pvcreate", "lvreduce", "lvresize", "zpool", "zfs", "btrfs", "losetup", "mount", "umount",
		"swapoff", "swapon", "fsck", "e2fsck", "xfs_repair", "tune2fs", "debugfs", "resize2fs", "dmsetup", "flashrom",
		"nvme", "sg_format", "kpartx", "partprobe", "mkntfs", "ntfsfix")
	for _, fs := range []string{"ext2", "ext3", "ext4", "xfs", "btrfs", "vfat", "fat", "msdos", "ntfs", "exfat", "f2fs", "minix", "cramfs", "bfs", "jfs", "reiserfs"} {
		reg((*call).disk, "mkfs."+fs, "fsck."+fs)
	}
	reg((*call).stress, "stress", "stress-ng")
}

func (c *call) rm() {
	c.noPathScan = true
	spec := optSpec{}
	if c.name != "rm" && c.name != "unlink" {
		spec = optSpec{short: "ns", long: []string{"iterations", "random-source", "size"}}
	}
	opts, ops := c.split(spec)
	if has(opts, "no-preserve-root") {
		c.deny("destroy_data", "rm --no-preserve-root")
	}
	if c.name == "shred" || c.name == "srm" || c.name == "wipe" {
		for _, o := range ops {
			if p, ok := c.j.resolve(o, c.sc); ok && isRawDevice(p) {
				c.deny("raw_device", "overwrites a raw device: "+p)
			}
		}
	}
	for _, o := range ops {
		c.checkArg(o, accDelete)
	}
}

func (c *call) rmdir() {
	c.noPathScan = true
	_, ops := c.split(optSpec{})
	for _, o := range ops {
		if p, ok := c.j.resolve(o, c.sc); ok && c.j.isProtected(p, true) {
			c.deny("self_tamper", "removes nanobot's own directory: "+p)
		}
	}
}

func (c *call) cp() {
	c.noPathScan = true
	opts, ops := c.split(optSpec{short: "tS", long: []string{"target-directory", "suffix", "backup", "reflink", "sparse", "preserve", "no-preserve"}})
	tree := has(opts, "r", "R", "a", "recursive", "archive")
	srcAcc := accRead
	if tree {
		srcAcc = accReadTree
	}
	dest, ops := destination(opts, ops, 1)
	for _, o := range ops {
		c.scanOne(o, srcAcc)
	}
	if dest.val != "" {
		c.checkArg(dest, accWrite)
	}
}

func (c *call) mv() {
	c.noPathScan = true
	opts, ops := c.split(optSpec{short: "tS", long: []string{"target-directory", "suffix", "backup"}})
	dest, ops := destination(opts, ops, 2)
	for _, o := range ops {
		c.checkArg(o, accDelete)
	}
	if dest.val != "" {
		c.checkArg(dest, accWrite)
	}
}

func (c *call) ln() {
	c.noPathScan = true
	opts, ops := c.split(optSpec{short: "tS", long: []string{"target-directory", "suffix", "backup"}})
	if len(ops) == 0 {
		return
	}
	target := ops[0]
	var name arg
	if t, ok := hasOpt(opts, "t", "target-directory"); ok {
		name = arg{val: t.val + "/" + baseName(target.val)}
	} else if len(ops) > 1 {
		name = ops[len(ops)-1]
	} else {
		name = arg{val: baseName(target.val)}
	}
	acc := accCreate
	if has(opts, "f", "force") {
		acc = accWrite
	}
	c.scanOne(target, accRead)
	c.checkArg(name, acc)
	tp, ok1 := c.j.resolve(target, c.sc)
	if !has(opts, "s", "symbolic") && ok1 {
		// A hard link to a file outside the workspace lets later edits reach it.
		if !c.j.inWorkspace(tp) && !isTemp(tp) {
			if cat, reason := c.j.classify(tp, accWrite); cat != "" {
				c.deny(cat, "hard link to "+reason)
			}
		}
	}
	np, ok2 := c.j.resolve(name, c.sc)
	if ok1 && ok2 {
		if !has(opts, "s", "symbolic") || strings.HasPrefix(target.val, "/") || strings.HasPrefix(target.val, "~") {
			c.sc.links[np] = tp
		} else if p, ok := c.j.resolve(arg{val: dirOf(np) + "/" + target.val}, c.sc); ok {
			c.sc.links[np] = p
		}
	} else if ok2 && !ok1 {
		c.sc.links[np] = "/" + unknownMark
	}
}

func dirOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		return p[:i]
	}
	return "/"
}

func (c *call) install() {
	c.noPathScan = true
	opts, ops := c.split(optSpec{short: "mogtSTZ", long: []string{"mode", "owner", "group", "target-directory", "suffix"}})
	if m, ok := hasOpt(opts, "m", "mode"); ok && setuidMode(m.val) {
		c.deny("privilege", "installs a setuid or setgid program")
	}
	if has(opts, "d", "directory") {
		for _, o := range ops {
			c.checkArg(o, accCreate)
		}
		return
	}
	dest, ops := destination(opts, ops, 2)
	for _, o := range ops {
		c.scanOne(o, accRead)
	}
	if dest.val != "" {
		c.checkArg(dest, accWrite)
	}
}

func (c *call) dd() {
	c.noPathScan = true
	kv := map[string]arg{}
	for _, a := range c.argv[1:] {
		if k, v, ok := strings.Cut(a.val, "="); ok {
			kv[k] = arg{val: v}
		}
	}
	if in, ok := kv["if"]; ok {
		c.checkArg(in, accRead)
	}
	out, ok := kv["of"]
	if !ok {
		return
	}
	if c.checkArg(out, accWrite) != "" {
		return
	}
	p, _ := c.j.resolve(out, c.sc)
	if anyUnder(p, benignDevices) {
		return
	}
	src := kv["if"].val
	bs := parseSize(kv["bs"].val)
	if bs <= 0 {
		bs = 512
	}
	count, hasCount := kv["count"]
	n, _ := strconv.ParseInt(count.val, 10, 64)
	switch {
	case !hasCount && (src == "/dev/zero" || src == "/dev/urandom" || src == "/dev/random"):
		c.deny("resource_exhaustion", "writes an endless stream into a file")
	case hasCount && n > 0 && bs > 0 && n > hugeSize/bs:
		c.deny("resource_exhaustion", "writes a huge file")
	}
}

// parseSize reads sizes such as 512, 4k, 1M, 100G, 2TiB.
func parseSize(s string) int64 {
	s = strings.TrimSpace(strings.TrimPrefix(s, "+"))
	if s == "" {
		return 0
	}
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	f, err := strconv.ParseFloat(s[:i], 64)
	if err != nil {
		return 0
	}
	mult := float64(1)
	switch strings.ToUpper(strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(s[i:], "iB"), "B"), "b")) {
	case "K":
		mult = 1 << 10
	case "M":
		mult = 1 << 20
	case "G":
		mult = 1 << 30
	case "T":
		mult = 1 << 40
	case "P", "E", "Z", "Y":
		mult = 1 << 50
	}
	v := f * mult
	if v > 1<<62 {
		return 1 << 62
	}
	return int64(v)
}

func (c *call) tee() {
	c.noPathScan = true
	opts, ops := c.split(optSpec{long: []string{"output-error"}})
	acc := accWrite
	if has(opts, "a", "append") {
		acc = accCreate
	}
	for _, o := range ops {
		if p, ok := c.j.resolve(o, c.sc); ok && acc == accCreate && c.keyscanAppend(p) {
			continue
		}
		c.checkArg(o, acc)
	}
}

// keyscanAppend reports whether appending to p is ssh-keyscan adding the
// keys it fetched to known_hosts, the usual way to trust a server once.
func (c *call) keyscanAppend(p string) bool {
	if c.j.p.home == "" || p != c.j.p.home+"/.ssh/known_hosts" {
		return false
	}
	if c.name == "ssh-keyscan" {
		return true
	}
	for _, in := range c.in {
		if in.name != "ssh-keyscan" {
			return false
		}
	}
	return len(c.in) > 0
}

func (c *call) touch() {
	c.noPathScan = true
	opts, ops := c.split(optSpec{short: "drt", long: []string{"date", "reference", "time"}})
	stamp := has(opts, "d", "r", "t", "date", "reference")
	for _, o := range ops {
		if p, ok := c.j.resolve(o, c.sc); ok && stamp && !c.j.inWorkspace(p) && !isTemp(p) && !c.j.isProtected(p, false) {
			c.deny("anti_forensics", "forges file timestamps outside the workspace: "+p)
			continue
		}
		c.checkArg(o, accCreate)
	}
}

func (c *call) mkdir() {
	c.noPathScan = true
	_, ops := c.split(optSpec{short: "mZ", long: []string{"mode", "context"}})
	for _, o := range ops {
		c.checkArg(o, accCreate)
	}
}

func (c *call) truncate() {
	c.noPathScan = true
	opts, ops := c.split(optSpec{short: "sro", long: []string{"size", "reference", "io-blocks"}})
	if s, ok := hasOpt(opts, "s", "size"); ok && parseSize(s.val) >= hugeSize {
		c.deny("resource_exhaustion", "creates a huge file")
	}
	for _, o := range ops {
		c.checkArg(o, accWrite)
	}
}

func (c *call) fallocate() {
	c.noPathScan = true
	opts, ops := c.split(optSpec{short: "lo", long: []string{"length", "offset"}})
	if s, ok := hasOpt(opts, "l", "length"); ok && parseSize(s.val) >= hugeSize {
		c.deny("resource_exhaustion", "allocates a huge file")
	}
	for _, o := range ops {
		c.checkArg(o, accWrite)
	}
}

var octalMode = lazyre.New(`^[0-7]{3,4}$`)

func setuidMode(m string) bool {
	if octalMode.MatchString(m) {
		if len(m) == 4 {
			d := m[0] - '0'
			return d&6 != 0
		}
		return false
	}
	for _, clause := range strings.Split(m, ",") {
		if i := strings.IndexAny(clause, "+="); i >= 0 && strings.ContainsAny(clause[i:], "s") {
			return true
		}
	}
	return false
}

func worldWritable(m string) bool {
	if octalMode.MatchString(m) {
		last := m[len(m)-1] - '0'
		return last&2 != 0
	}
	for _, clause := range strings.Split(m, ",") {
		i := strings.IndexAny(clause, "+=")
		if i < 0 {
			continue
		}
		who := clause[:i]
		if (who == "" || strings.ContainsAny(who, "ao")) && strings.Contains(clause[i:], "w") {
			return true
		}
	}
	return false
}

func (c *call) chmod() {
	c.noPathScan = true
	args := c.argv[1:]
	recursive := false
	var ops []arg
	ref := false
	for k, a := range args {
		v := a.val
		switch {
		case v == "--":
			ops = append(ops, args[k+1:]...)
		case v == "-R" || v == "--recursive" || (strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && strings.Contains(v, "R")):
			recursive = true
			continue
		case strings.HasPrefix(v, "--reference"):
			ref = true
			continue
		case strings.HasPrefix(v, "-") && !strings.ContainsAny(v[1:], "rwxXst0123456789"):
			continue
		default:
			ops = append(ops, a)
			continue
		}
		break
	}
	if len(ops) == 0 {
		return
	}
	mode := ""
	if !ref {
		mode = ops[0].val
		ops = ops[1:]
	}
	if setuidMode(mode) {
		c.deny("privilege", "sets the setuid or setgid bit")
	}
	for _, o := range ops {
		if c.checkArg(o, accPerm) != "" {
			continue
		}
		if recursive && worldWritable(mode) {
			c.deny("permissions", "makes a tree world-writable: "+o.text())
		}
		if recursive {
			if p, ok := c.j.resolve(o, c.sc); ok && p == c.j.p.workspace && (mode == "000" || mode == "0") {
				c.deny("permissions", "removes all permissions from the workspace")
			}
		}
	}
}

func (c *call) chown() {
	c.noPathScan = true
	opts, ops := c.split(optSpec{long: []string{"from"}})
	if len(ops) == 0 {
		return
	}
	if !has(opts, "reference") {
		ops = ops[1:]
	}
	for _, o := range ops {
		c.checkArg(o, accPerm)
	}
}

func (c *call) setfacl() {
	c.noPathScan = true
	var ops []arg
	if c.name == "chattr" {
		for _, a := range c.argv[1:] {
			if strings.HasPrefix(a.val, "+") || strings.HasPrefix(a.val, "-") || strings.HasPrefix(a.val, "=") {
				continue
			}
			ops = append(ops, a)
		}
	} else {
		_, ops = c.split(optSpec{short: "mMxX", long: []string{"modify", "modify-file", "remove", "remove-file", "set", "set-file"}})
	}
	for _, o := range ops {
		c.checkArg(o, accPerm)
	}
}

// tar judges archives created from sensitive trees, extraction outside the
// workspace and the options that run commands.
func (c *call) tar() {
	c.noPathScan = true
	args := c.argv[1:]
	mode := ""
	var dir, file arg
	var ops []arg
	for k := 0; k < len(args); k++ {
		v := args[k].val
		switch {
		case k == 0 && !strings.HasPrefix(v, "-") && strings.Trim(v, "cxtrudvzjJafpPkmOSwW") == "":
			mode = v
			if strings.Contains(v, "f") && k+1 < len(args) {
				file = args[k+1]
				k++
			}
		case strings.HasPrefix(v, "--checkpoint-action=") || strings.HasPrefix(v, "--to-command=") ||
			strings.HasPrefix(v, "--use-compress-program=") || strings.HasPrefix(v, "--info-script=") ||
			strings.HasPrefix(v, "--new-volume-script=") || strings.HasPrefix(v, "--rsh-command="):
			_, cmd, _ := strings.Cut(v, "=")
			cmd = strings.TrimPrefix(cmd, "exec=")
			c.j.nested(c.owner, arg{val: cmd}, c.sc, "tar")
		case v == "-I" || v == "-F" || v == "--to-command" || v == "--use-compress-program":
			if k+1 < len(args) {
				c.j.nested(c.owner, args[k+1], c.sc, "tar")
				k++
			}
		case v == "-C" || v == "--directory":
			if k+1 < len(args) {
				dir = args[k+1]
				k++
			}
		case strings.HasPrefix(v, "--directory="):
			dir = arg{val: strings.TrimPrefix(v, "--directory=")}
		case v == "-f" || v == "--file":
			if k+1 < len(args) {
				file = args[k+1]
				k++
			}
		case strings.HasPrefix(v, "--file="):
			file = arg{val: strings.TrimPrefix(v, "--file=")}
		case strings.HasPrefix(v, "--"):
			switch v {
			case "--create", "--extract", "--get", "--list", "--append":
				mode += map[string]string{"--create": "c", "--extract": "x", "--get": "x", "--list": "t", "--append": "r"}[v]
			}
		case strings.HasPrefix(v, "-"):
			mode += v[1:]
			if strings.HasSuffix(v, "f") && k+1 < len(args) {
				file = args[k+1]
				k++
			}
		default:
			ops = append(ops, args[k])
		}
	}
	switch {
	case strings.ContainsAny(mode, "cru"):
		if file.val != "" && file.val != "-" {
			c.checkArg(file, accWrite)
		}
		remove := hasWord(c.argv, "--remove-files")
		for _, o := range ops {
			if dir.val != "" && !strings.HasPrefix(o.val, "/") {
				o = arg{val: dir.val + "/" + o.val}
			}
			c.scanOne(o, accReadTree)
			if remove {
				c.checkArg(o, accDelete) // archived, then deleted
			}
		}
		for _, o := range ops {
			if p, ok := c.j.resolve(o, c.sc); ok && !c.j.inWorkspace(p) && !isTemp(p) {
				c.ci.sensitive = true
			}
		}
	case strings.Contains(mode, "x"):
		if file.val != "" && file.val != "-" {
			c.checkArg(file, accRead)
		}
		c.taintUnpacked(file, dir)
		if dir.val != "" {
			c.unpackTarget(dir)
		}
	default:
		if file.val != "" {
			c.checkArg(file, accRead)
		}
	}
}

func (c *call) zip() {
	c.noPathScan = true
	opts, ops := c.split(optSpec{short: "TtnbxiPZO", long: []string{"unzip-command", "password"}})
	if t, ok := hasOpt(opts, "TT", "unzip-command"); ok {
		c.j.nested(c.owner, t, c.sc, "zip")
	}
	for k, a := range c.argv {
		if a.val == "-TT" && k+1 < len(c.argv) {
			c.j.nested(c.owner, c.argv[k+1], c.sc, "zip")
		}
	}
	if len(ops) == 0 {
		return
	}
	archive := ops[0]
	ops = ops[1:]
	if c.name == "7z" || c.name == "7za" || c.name == "rar" {
		if len(ops) == 0 {
			return
		}
		archive, ops = ops[0], ops[1:]
		if !strings.HasPrefix(c.argv[1].val, "a") {
			c.checkArg(archive, accRead)
			out := arg{}
			for _, a := range c.argv[2:] {
				if strings.HasPrefix(a.val, "-o") {
					out = part(a, a.val[2:])
				}
			}
			c.taintUnpacked(archive, out)
			return
		}
	}
	c.checkArg(archive, accWrite)
	for _, o := range ops {
		c.scanOne(o, accReadTree)
		if p, ok := c.j.resolve(o, c.sc); ok && !c.j.inWorkspace(p) && !isTemp(p) {
			c.ci.sensitive = true
		}
	}
}

func (c *call) unzip() {
	c.noPathScan = true
	opts, ops := c.split(optSpec{short: "dxP", long: []string{}})
	d, _ := hasOpt(opts, "d")
	if d.val != "" {
		c.unpackTarget(d)
	}
	if len(ops) > 0 {
		c.checkArg(ops[0], accRead)
		c.taintUnpacked(ops[0], d)
	}
}

func (c *call) yes() {
	if c.stdout != "" && !anyUnder(c.stdout, benignDevices) {
		c.deny("resource_exhaustion", "fills a file with endless output")
	}
}

func (c *call) catLike() {
	if c.stdout == "" || anyUnder(c.stdout, benignDevices) {
		return
	}
	limited := false
	for _, a := range c.argv[1:] {
		if c.name != "cat" && c.name != "tac" && (strings.HasPrefix(a.val, "-c") || strings.HasPrefix(a.val, "-n") || strings.HasPrefix(a.val, "--bytes") || strings.HasPrefix(a.val, "--lines") || strings.HasPrefix(a.val, "-") && isNumber(a.val[1:])) {
			limited = true
			if strings.HasPrefix(a.val, "-c") || strings.HasPrefix(a.val, "--bytes") {
				v := strings.TrimLeft(strings.TrimPrefix(strings.TrimPrefix(a.val, "--bytes"), "-c"), "=")
				if v == "" {
					for k, x := range c.argv {
						if x.val == a.val && k+1 < len(c.argv) {
							v = c.argv[k+1].val
						}
					}
				}
				if parseSize(v) >= hugeSize {
					limited = false
				}
			}
		}
	}
	if limited {
		return
	}
	for _, a := range c.argv[1:] {
		switch a.val {
		case "/dev/zero", "/dev/urandom", "/dev/random":
			c.deny("resource_exhaustion", "copies an endless stream into a file")
			return
		}
	}
}

func (c *call) editor() {
	c.noPathScan = true
	_, ops := c.split(optSpec{short: "cSutTwWiU", long: []string{"cmd"}})
	for _, o := range ops {
		if strings.HasPrefix(o.val, "+") {
			continue
		}
		c.checkArg(o, accCreate)
	}
}

// disk judges filesystem and block device tools; the read-only forms that
// only list are allowed.
func (c *call) disk() {
	if c.imageFile() {
		return
	}
	args := argTexts(c.argv[1:])
	joined := " " + strings.Join(args, " ") + " "
	readOnly := false
	switch c.name {
	case "fdisk", "sfdisk", "parted", "gdisk", "sgdisk":
		readOnly = strings.Contains(joined, " -l ") || strings.Contains(joined, " --list ") ||
			strings.Contains(joined, " print ") || strings.Contains(joined, " -p ") || strings.Contains(joined, " -d ") || len(args) == 0
	case "mount":
		readOnly = len(args) == 0 || joined == " -l " || strings.HasPrefix(joined, " -l -t ") || joined == " --list "
	case "losetup":
		readOnly = len(args) == 0 || strings.Contains(joined, " -a ") || strings.Contains(joined, " -l ") || strings.Contains(joined, " --list ")
	case "swapon":
		readOnly = len(args) == 0 || strings.Contains(joined, " --show") || strings.Contains(joined, " -s ")
	case "hdparm":
		readOnly = !strings.Contains(joined, "--security") && !strings.Contains(joined, "--trim") && !strings.Contains(joined, "--write") &&
			!strings.Contains(joined, "--make-bad") && !strings.Contains(joined, "--dco") && !strings.Contains(joined, " -z")
	case "mdadm":
		readOnly = strings.Contains(joined, "--detail") || strings.Contains(joined, "--examine") || strings.Contains(joined, " -D ") || strings.Contains(joined, " -E ")
	case "cryptsetup":
		readOnly = strings.Contains(joined, " status ") || strings.Contains(joined, " luksDump ") || strings.Contains(joined, " isLuks ")
	case "zpool", "zfs":
		readOnly = strings.Contains(joined, " list ") || strings.Contains(joined, " status ") || strings.Contains(joined, " get ") || len(args) == 0
	case "btrfs":
		readOnly = strings.Contains(joined, " show ") || strings.Contains(joined, " list ") || strings.Contains(joined, " df ") || strings.Contains(joined, " usage ")
	case "tune2fs":
		readOnly = strings.Contains(joined, " -l ")
	case "dmsetup":
		readOnly = strings.Contains(joined, " ls ") || strings.Contains(joined, " info ") || strings.Contains(joined, " status ") || strings.Contains(joined, " table ")
	case "nvme":
		readOnly = strings.Contains(joined, " list ") || strings.Contains(joined, " smart-log ") || strings.Contains(joined, " id-ctrl ")
	case "badblocks":
		readOnly = !strings.Contains(joined, " -w") && !strings.Contains(joined, " -n")
	case "partprobe":
		readOnly = strings.Contains(joined, " -s ")
	}
	if readOnly {
		return
	}
	c.deny("raw_device", c.name+" changes disks, partitions or filesystems")
}

// imageFile reports whether a filesystem or partitioning tool works on
// image files in the workspace only (mkfs.ext4 disk.img), not on devices.
func (c *call) imageFile() bool {
	switch {
	case strings.HasPrefix(c.name, "mkfs") || strings.HasPrefix(c.name, "fsck") || strings.HasPrefix(c.name, "mkdosfs"):
	default:
		switch c.name {
		case "mke2fs", "mkswap", "mkntfs", "e2fsck", "tune2fs", "resize2fs", "debugfs", "sfdisk", "fdisk", "gdisk", "sgdisk", "parted", "wipefs", "xfs_repair", "ntfsfix":
		default:
			return false
		}
	}
	files := 0
	for _, o := range c.argv[1:] {
		if strings.HasPrefix(o.val, "-") || isNumber(o.val) || c.name == "parted" && files > 0 {
			continue // an option, a size, a parted command; labels and types pass as names in the workspace
		}
		p, ok := c.j.resolve(o, c.sc)
		if ok {
			if real, err := Resolve(p); err == nil {
				p = real
			}
		}
		if !ok || strings.HasPrefix(p, "/dev/") || !c.j.inWorkspace(p) && !isTemp(p) {
			return false
		}
		files++
	}
	return files > 0
}

func (c *call) stress() {
	c.deny("resource_exhaustion", c.name+" loads the machine on purpose")
}

// destination splits the operands of cp, mv and install: the -t directory,
// or else the last operand when there are at least min of them.
func destination(opts []opt, ops []arg, min int) (arg, []arg) {
	if t, ok := hasOpt(opts, "t", "target-directory"); ok {
		return t, ops
	}
	if len(ops) >= min {
		return ops[len(ops)-1], ops[:len(ops)-1]
	}
	return arg{}, ops
}
