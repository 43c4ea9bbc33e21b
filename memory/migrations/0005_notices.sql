-- What the daemon told a chat once and must not repeat after a restart:
-- a stranger told their id, a chat told that consolidation keeps failing.
CREATE TABLE notices (
	key TEXT    PRIMARY KEY,
	at  INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX notices_at ON notices (at);
