-- Times are unix milliseconds (UTC); days are 'YYYY-MM-DD'.

-- Every message of every conversation, in order. Nothing is ever deleted:
-- consolidation and /new only change state, so the database stays the record.
CREATE TABLE messages (
	id                INTEGER PRIMARY KEY,
	session           TEXT    NOT NULL,
	role              TEXT    NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
	content           TEXT    NOT NULL DEFAULT '',
	images            TEXT,    -- JSON array of data: URLs; NULL when none
	tool_calls        TEXT,    -- JSON array of tool calls; NULL when none
	tool_call_id      TEXT    NOT NULL DEFAULT '',
	name              TEXT    NOT NULL DEFAULT '',
	created_at        INTEGER NOT NULL,
	prompt_tokens     INTEGER NOT NULL DEFAULT 0,
	completion_tokens INTEGER NOT NULL DEFAULT 0,
	state             TEXT    NOT NULL DEFAULT 'live'
	                  CHECK (state IN ('live', 'consolidated', 'archived'))
);
-- The window read (newest live messages of one session) walks this index
-- backwards and stops after the limit, however long the session is.
CREATE INDEX messages_session_state_id ON messages (session, state, id);

-- MEMORY: one Markdown document per scope.
CREATE TABLE memory (
	scope      TEXT    PRIMARY KEY
	           CHECK (scope = 'global' OR (substr(scope, 1, 5) = 'chat:' AND length(scope) > 5)),
	doc        TEXT    NOT NULL,
	updated_at INTEGER NOT NULL
);

-- HISTORY: append-only dated entries per scope.
CREATE TABLE history (
	id        INTEGER PRIMARY KEY,
	scope     TEXT    NOT NULL
	          CHECK (scope = 'global' OR (substr(scope, 1, 5) = 'chat:' AND length(scope) > 5)),
	at        INTEGER NOT NULL,
	entry     TEXT    NOT NULL,
	-- The scope as one full-text token ('s' and its hex), so a search can
	-- intersect with the scope inside the index instead of filtering every
	-- match of the other scopes afterwards.
	scope_key TEXT    GENERATED ALWAYS AS ('s' || lower(hex(scope))) VIRTUAL
);
CREATE INDEX history_scope_id ON history (scope, id);

-- Inbound updates, recorded before the channel acknowledges them. The unique
-- key makes a replayed update a no-op.
CREATE TABLE inbox (
	id          INTEGER PRIMARY KEY,
	channel     TEXT    NOT NULL,
	update_id   INTEGER NOT NULL,
	chat_id     TEXT    NOT NULL DEFAULT '',
	payload     BLOB,
	state       TEXT    NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'started', 'done')),
	received_at INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL,
	UNIQUE (channel, update_id)
);
CREATE INDEX inbox_open ON inbox (channel, id) WHERE state <> 'done';

-- Replies waiting to be delivered.
CREATE TABLE outbox (
	id              INTEGER PRIMARY KEY,
	channel         TEXT    NOT NULL,
	chat_id         TEXT    NOT NULL,
	text            TEXT    NOT NULL,
	reply_to        INTEGER NOT NULL DEFAULT 0,
	inbox_id        INTEGER REFERENCES inbox (id),
	state           TEXT    NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'failed')),
	attempts        INTEGER NOT NULL DEFAULT 0,
	sent_message_id INTEGER NOT NULL DEFAULT 0,
	error           TEXT    NOT NULL DEFAULT '',
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL
);
CREATE INDEX outbox_pending ON outbox (channel, id) WHERE state = 'pending';

-- Small key/value state of the daemon (e.g. a channel's update offset).
CREATE TABLE state (
	key        TEXT    PRIMARY KEY,
	value      TEXT    NOT NULL,
	updated_at INTEGER NOT NULL
) WITHOUT ROWID;

-- One row per tool call. Arguments arrive already redacted.
CREATE TABLE audit (
	id           INTEGER PRIMARY KEY,
	at           INTEGER NOT NULL,
	session      TEXT    NOT NULL DEFAULT '',
	tool         TEXT    NOT NULL,
	args         TEXT    NOT NULL DEFAULT '',
	verdict      TEXT    NOT NULL DEFAULT '',
	category     TEXT    NOT NULL DEFAULT '',
	reason       TEXT    NOT NULL DEFAULT '',
	approver     TEXT    NOT NULL DEFAULT '',
	duration_ns  INTEGER NOT NULL DEFAULT 0,
	exit_code    INTEGER NOT NULL DEFAULT 0,
	output_bytes INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX audit_at ON audit (at);
CREATE INDEX audit_session_at ON audit (session, at);

-- Token usage per session and calendar day.
CREATE TABLE usage (
	session           TEXT    NOT NULL,
	day               TEXT    NOT NULL,
	calls             INTEGER NOT NULL DEFAULT 0,
	prompt_tokens     INTEGER NOT NULL DEFAULT 0,
	completion_tokens INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (session, day)
) WITHOUT ROWID;
CREATE INDEX usage_day ON usage (day);

-- The target of the readiness write probe.
CREATE TABLE heartbeat (
	id INTEGER PRIMARY KEY CHECK (id = 1),
	at INTEGER NOT NULL
);
