-- Scheduled jobs. next_run is the slot the job fires at next (NULL once a
-- one-shot job has fired); a firing is an inbox item of channel 'cron'
-- written in the same transaction that moves next_run on. Removing a job
-- sets removed_at: the row stays, so its turns' usage still counts for its
-- chat.
CREATE TABLE jobs (
	id         INTEGER PRIMARY KEY,
	channel    TEXT    NOT NULL,
	chat_id    TEXT    NOT NULL,
	created_by TEXT    NOT NULL DEFAULT '',
	message    TEXT    NOT NULL,
	kind       TEXT    NOT NULL CHECK (kind IN ('cron', 'every', 'at')),
	spec       TEXT    NOT NULL,
	zone       TEXT    NOT NULL,
	next_run   INTEGER,
	last_run   INTEGER,
	created_at INTEGER NOT NULL,
	removed_at INTEGER
);
CREATE INDEX jobs_chat ON jobs (channel, chat_id) WHERE removed_at IS NULL;

-- Background subagents, from start to end. One still 'running' at start-up
-- was cut off by a restart: it is reported as interrupted, never re-run.
CREATE TABLE subagents (
	id         INTEGER PRIMARY KEY,
	channel    TEXT    NOT NULL,
	chat_id    TEXT    NOT NULL,
	sender_id  TEXT    NOT NULL DEFAULT '',
	label      TEXT    NOT NULL,
	task       TEXT    NOT NULL,
	state      TEXT    NOT NULL DEFAULT 'running'
	           CHECK (state IN ('running', 'finished', 'limit', 'timeout', 'failed', 'cancelled', 'interrupted')),
	result     TEXT    NOT NULL DEFAULT '',
	started_at INTEGER NOT NULL,
	ended_at   INTEGER
);
CREATE INDEX subagents_chat_state ON subagents (chat_id, state);
