package safety

import (
	"strconv"
	"strings"
)

func registerDiskHandlers(reg func(handler, ...string)) {
	reg((*call).dd, "dd")
	reg((*call).disk, "mkfs", "mke2fs", "mkswap", "wipefs", "blkdiscard", "sfdisk", "gdisk", "sgdisk", "cfdisk",
		"fdisk", "parted", "badblocks", "hdparm", "mdadm", "cryptsetup", "lvremove", "vgremove", "pvremove", "lvcreate",
		"vgcreate", "pvcreate", "lvreduce", "lvresize", "zpool", "zfs", "btrfs", "losetup", "mount", "umount",
		"swapoff", "swapon", "fsck", "e2fsck", "xfs_repair", "tune2fs", "debugfs", "resize2fs", "dmsetup", "flashrom",
		"nvme", "sg_format", "kpartx", "partprobe", "mkntfs", "ntfsfix")
	for _, fs := range []string{"ext2", "ext3", "ext4", "xfs", "btrfs", "vfat", "fat", "msdos", "ntfs", "exfat", "f2fs", "minix", "cramfs", "bfs", "jfs", "reiserfs"} {
		reg((*call).disk, "mkfs."+fs, "fsck."+fs)
	}
}

// disk judges filesystem and block device tools; the read-only forms that
// only list are allowed.
func (c *call) disk() outcome {
	if c.imageFile() {
		return genericScan
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
		return genericScan
	}
	c.deny("raw_device", c.name+" changes disks, partitions or filesystems")
	return genericScan
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

func (c *call) dd() outcome {
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
		return judgedArgs
	}
	if c.checkArg(out, accWrite) != "" {
		return judgedArgs
	}
	p, _ := c.j.resolve(out, c.sc)
	if anyUnder(p, benignDevices) {
		return judgedArgs
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
	return judgedArgs
}
