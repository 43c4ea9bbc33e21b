package safety

import (
	"path"
	"strings"
)

// A file fetched from the network is code of unknown origin whichever tool
// fetched it, and so is everything unpacked from it. Running it later in
// the same line is a download run; the filter marks such files as tainted
// (see scope.taintOf) for every downloader and every unpacker.

// taintDownload marks a file a downloader wrote as coming from the network.
func (c *call) taintDownload(a arg) {
	if p, ok := c.j.resolve(a, c.sc); ok {
		c.sc.tainted[p] = "download_exec"
	}
}

// aria2Outputs marks the files aria2c saves: --out in --dir, or the last
// element of each URL.
func (c *call) aria2Outputs() {
	opts, ops := c.split(optSpec{short: "dois", long: []string{"dir", "out", "input-file", "split", "max-connection-per-server"}})
	dir := "."
	if d, ok := hasOpt(opts, "d", "dir"); ok {
		dir = d.val
	}
	if o, ok := hasOpt(opts, "o", "out"); ok {
		c.taintDownload(part(o, dir+"/"+o.val))
		return
	}
	for _, u := range ops {
		if isURL(u.val) {
			c.taintDownload(part(u, dir+"/"+urlBase(u.val)))
		}
	}
}

// ftpGets marks the files an ftp-like client fetches with "get NAME
// [LOCAL]", in its arguments or its script.
func (c *call) ftpGets(text string) {
	f := strings.Fields(text)
	for k := 0; k+1 < len(f); k++ {
		if f[k] != "get" && f[k] != "mget" && f[k] != "recv" && f[k] != "pget" {
			continue
		}
		name := path.Base(f[k+1])
		if k+2 < len(f) && !strings.HasPrefix(f[k+2], "-") && f[k+2] != "get" && f[k+2] != "quit" && f[k+2] != "bye" {
			name = f[k+2]
		}
		c.taintDownload(arg{val: name})
	}
}

// taintUnpacked marks the directory an archive is unpacked into when the
// archive itself is tainted or is a download piped in: its contents are as unknown as the archive.
func (c *call) taintUnpacked(archive, dir arg) {
	t, ok := "", false
	if archive.val == "" || archive.val == "-" {
		for _, p := range c.in {
			if p.fetch {
				t, ok = "download_exec", true
			}
		}
	} else if ap, known := c.j.resolve(archive, c.sc); known {
		t, ok = c.sc.taintOf(ap)
	}
	if !ok {
		return
	}
	if dir.val == "" {
		dir = arg{val: "."}
	}
	if dp, ok := c.j.resolve(dir, c.sc); ok {
		c.sc.tainted[strings.TrimSuffix(dp, "/")+"/"] = t
	}
}

// unpackTarget checks the directory an archive is unpacked into: a
// temporary directory is scratch space, anything else is judged as a write.
func (c *call) unpackTarget(dir arg) {
	if p, ok := c.j.resolve(dir, c.sc); ok {
		for _, t := range tempDirs {
			if p == t {
				return
			}
		}
	}
	c.checkArg(dir, accWrite)
}

// taintCopies marks what scp or rsync copies from another host: the
// destination, the file of each remote source's name inside it, and when
// a tree is copied everything under the destination.
func (c *call) taintCopies(srcs []arg, dest arg, tree bool) {
	remote := false
	for _, s := range srcs {
		if !isRemoteSpec(s.val) {
			continue
		}
		remote = true
		_, file, _ := strings.Cut(s.val, ":")
		if b := path.Base(strings.TrimPrefix(file, ":")); b != "." && b != "/" && b != "" {
			c.taintDownload(part(dest, strings.TrimSuffix(dest.val, "/")+"/"+b))
		}
	}
	if !remote {
		return
	}
	c.taintDownload(dest)
	if p, ok := c.j.resolve(dest, c.sc); ok && tree {
		c.sc.tainted[p+"/"] = "download_exec"
	}
}
