-- Full-text index over HISTORY, kept in step by triggers. FTS5 when the
-- SQLite library has it (builds with -tags sqlite_fts5), FTS4 otherwise; the
-- index is external-content, so its rowid is history.id in both. The
-- scope_key column lets a search match its scope inside the index.
-- #if fts5
CREATE VIRTUAL TABLE history_fts USING fts5 (
	entry,
	scope_key,
	content = 'history',
	content_rowid = 'id',
	tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER history_fts_insert AFTER INSERT ON history BEGIN
	INSERT INTO history_fts (rowid, entry, scope_key) VALUES (new.id, new.entry, new.scope_key);
END;
CREATE TRIGGER history_fts_delete AFTER DELETE ON history BEGIN
	INSERT INTO history_fts (history_fts, rowid, entry, scope_key)
	VALUES ('delete', old.id, old.entry, old.scope_key);
END;
CREATE TRIGGER history_fts_update AFTER UPDATE OF entry, scope ON history BEGIN
	INSERT INTO history_fts (history_fts, rowid, entry, scope_key)
	VALUES ('delete', old.id, old.entry, old.scope_key);
	INSERT INTO history_fts (rowid, entry, scope_key) VALUES (new.id, new.entry, new.scope_key);
END;
INSERT INTO history_fts (history_fts) VALUES ('rebuild');
-- #else
CREATE VIRTUAL TABLE history_fts USING fts4 (
	content="history",
	entry,
	scope_key,
	tokenize=unicode61 "remove_diacritics=2"
);
CREATE TRIGGER history_fts_insert AFTER INSERT ON history BEGIN
	INSERT INTO history_fts (docid, entry, scope_key) VALUES (new.id, new.entry, new.scope_key);
END;
CREATE TRIGGER history_fts_delete BEFORE DELETE ON history BEGIN
	DELETE FROM history_fts WHERE docid = old.id;
END;
CREATE TRIGGER history_fts_update_old BEFORE UPDATE OF entry, scope ON history BEGIN
	DELETE FROM history_fts WHERE docid = old.id;
END;
CREATE TRIGGER history_fts_update_new AFTER UPDATE OF entry, scope ON history BEGIN
	INSERT INTO history_fts (docid, entry, scope_key) VALUES (new.id, new.entry, new.scope_key);
END;
INSERT INTO history_fts (history_fts) VALUES ('rebuild');
-- #endif
