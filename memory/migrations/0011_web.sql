-- The web console's sign-in. A one-time link's token and a browser
-- session's secret are stored only as their SHA-256 (hex), so a copy of the
-- database signs nobody in.
CREATE TABLE web_logins (
	hash    TEXT    PRIMARY KEY,
	expires INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE web_sessions (
	id        TEXT    PRIMARY KEY,
	hash      TEXT    NOT NULL UNIQUE,
	agent     TEXT    NOT NULL, -- the browser's User-Agent
	created   INTEGER NOT NULL,
	last_seen INTEGER NOT NULL,
	expires   INTEGER NOT NULL
);

-- Every text a MEMORY document had, newest 50 per scope, so an edit (by the
-- owner or by consolidation) can be seen and undone. The triggers record
-- each write of any code path, with the time the write gave the document.
CREATE TABLE memory_revisions (
	id    INTEGER PRIMARY KEY,
	scope TEXT    NOT NULL,
	doc   TEXT    NOT NULL,
	at    INTEGER NOT NULL
);
CREATE INDEX memory_revisions_scope_id ON memory_revisions (scope, id);
CREATE TRIGGER memory_revisions_insert AFTER INSERT ON memory BEGIN
	INSERT INTO memory_revisions (scope, doc, at) VALUES (new.scope, new.doc, new.updated_at);
	DELETE FROM memory_revisions WHERE scope = new.scope AND id <= (SELECT id FROM memory_revisions
		WHERE scope = new.scope ORDER BY id DESC LIMIT 1 OFFSET 50);
END;
CREATE TRIGGER memory_revisions_update AFTER UPDATE OF doc ON memory WHEN new.doc IS NOT old.doc BEGIN
	INSERT INTO memory_revisions (scope, doc, at) VALUES (new.scope, new.doc, new.updated_at);
	DELETE FROM memory_revisions WHERE scope = new.scope AND id <= (SELECT id FROM memory_revisions
		WHERE scope = new.scope ORDER BY id DESC LIMIT 1 OFFSET 50);
END;
INSERT INTO memory_revisions (scope, doc, at) SELECT scope, doc, updated_at FROM memory ORDER BY scope;

-- A paused job keeps its schedule but does not fire until it is resumed.
ALTER TABLE jobs ADD COLUMN paused INTEGER NOT NULL DEFAULT 0;
