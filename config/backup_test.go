package config

import "testing"

func TestStorageBackup(t *testing.T) {
	c, err := Parse("/srv/bot/config.yaml", []byte("storage:\n  backup:\n    dir: backups\n    every: 6h\n    keep: 3\n"), noEnv)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if b := c.Storage.Backup; b.Dir != "/srv/bot/backups" || b.Every.Hours() != 6 || b.Keep != 3 {
		t.Errorf("storage.backup = %+v, want /srv/bot/backups every 6h keep 3", b)
	}
	if d := Default().Storage.Backup; d.Dir != "" {
		t.Errorf("backups are on by default: %+v", d)
	}

	for _, tt := range []struct{ name, yaml, want string }{
		{"too often", "storage:\n  backup:\n    every: 30s\n", "config.yaml:3: storage.backup.every: must be at least 1m"},
		{"keep none", "storage:\n  backup:\n    keep: 0\n", "config.yaml:3: storage.backup.keep: must be between 1 and 1000"},
		{"in the workspace", "agent:\n  workspace: /srv/ws\nstorage:\n  backup:\n    dir: /srv/ws/backups\n",
			"config.yaml:5: storage.backup.dir: must not be inside agent.workspace, where the tools could read or remove the copies"},
		{"the workspace itself", "agent:\n  workspace: /srv/ws\nstorage:\n  backup:\n    dir: /srv/ws\n",
			"config.yaml:5: storage.backup.dir: must not be inside agent.workspace, where the tools could read or remove the copies"},
		{"the database", "storage:\n  path: /srv/db\n  backup:\n    dir: /srv/db\n", "config.yaml:4: storage.backup.dir: must be a directory, not the database"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("config.yaml", []byte(tt.yaml), noEnv)
			if err == nil || err.Error() != tt.want {
				t.Errorf("Parse = %v, want %s", err, tt.want)
			}
		})
	}
	// A sibling of the workspace is fine.
	if _, err := Parse("config.yaml", []byte("agent:\n  workspace: /srv/ws\nstorage:\n  backup:\n    dir: /srv/ws-backups\n"), noEnv); err != nil {
		t.Errorf("a directory next to the workspace: %v", err)
	}
}
