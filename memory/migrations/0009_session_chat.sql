-- The chat a message or a usage row belongs to, so per-chat queries match
-- two columns: a chat's own session, its jobs' ("cron:<id>") and its
-- background tasks' ("subagent:<id>"). Empty for a session of no chat (the
-- heartbeat's).
ALTER TABLE messages ADD COLUMN channel TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN chat    TEXT NOT NULL DEFAULT '';
ALTER TABLE usage    ADD COLUMN channel TEXT NOT NULL DEFAULT '';
ALTER TABLE usage    ADD COLUMN chat    TEXT NOT NULL DEFAULT '';

CREATE TEMP TABLE session_chat (session TEXT PRIMARY KEY, channel TEXT NOT NULL, chat TEXT NOT NULL);
INSERT OR IGNORE INTO session_chat
	SELECT DISTINCT session, substr(session, 1, instr(session, ':') - 1), substr(session, instr(session, ':') + 1)
	FROM (SELECT session FROM messages UNION SELECT session FROM usage)
	WHERE instr(session, ':') > 1 AND substr(session, instr(session, ':') + 1) <> ''
		AND session NOT LIKE 'cron:%' AND session NOT LIKE 'subagent:%';
INSERT OR IGNORE INTO session_chat SELECT 'cron:' || id, channel, chat_id FROM jobs;
INSERT OR IGNORE INTO session_chat SELECT 'subagent:' || id, channel, chat_id FROM subagents;

UPDATE messages SET (channel, chat) = (SELECT channel, chat FROM session_chat WHERE session_chat.session = messages.session)
	WHERE session IN (SELECT session FROM session_chat);
UPDATE usage SET (channel, chat) = (SELECT channel, chat FROM session_chat WHERE session_chat.session = usage.session)
	WHERE session IN (SELECT session FROM session_chat);
DROP TABLE session_chat;

CREATE INDEX usage_chat ON usage (channel, chat, day);
