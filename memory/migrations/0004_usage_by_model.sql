-- Usage is kept per model too: with fallback endpoints, a day's tokens may
-- come from more than one model. Rows from before this count under ''.
CREATE TABLE usage_by_model (
	session           TEXT    NOT NULL,
	day               TEXT    NOT NULL,
	model             TEXT    NOT NULL DEFAULT '',
	calls             INTEGER NOT NULL DEFAULT 0,
	prompt_tokens     INTEGER NOT NULL DEFAULT 0,
	completion_tokens INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (session, day, model)
) WITHOUT ROWID;
INSERT INTO usage_by_model (session, day, calls, prompt_tokens, completion_tokens)
	SELECT session, day, calls, prompt_tokens, completion_tokens FROM usage;
DROP TABLE usage;
ALTER TABLE usage_by_model RENAME TO usage;
CREATE INDEX usage_day ON usage (day);
