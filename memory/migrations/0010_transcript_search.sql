-- Full-text index over the transcript of each chat: what the user and the
-- assistant said in the chat's own session (jobs' and the heartbeat's
-- answers are mirrored into it). Tool results, system messages, tool-call
-- only turns and the working sessions of jobs and tasks stay out: they are
-- noise to a question about what was said. External-content, so the text is
-- stored once, in messages; the index's rowid is messages.id. FTS5 when the
-- SQLite library has it, FTS4 otherwise, as for history_fts.
--
-- transcript_key is the chat as one full-text token ('c', the hex of
-- "channel:chat", '0'), so a search intersects with its chat inside the
-- index. It ends in a digit because the FTS5 index stems its words (the
-- porter tokenizer: "charges" finds "charge") and every suffix the stemmer
-- takes off ends in a letter, so it never touches the key.
-- It is NULL for every message outside a transcript, which is what the
-- triggers test: only rows with a key are ever in the index, and a 'delete'
-- is only issued for them (an external-content FTS5 table is corrupted by
-- deleting a row it never held). FTS5 reads its content from the view of
-- those rows, so its 'rebuild' and 'integrity-check' see just them; FTS4
-- cannot read a view (it asks for rowids), so it reads messages and is
-- filled with an INSERT … SELECT of the transcript's rows instead: a
-- 'rebuild' of it would index every message.
ALTER TABLE messages ADD COLUMN transcript_key TEXT GENERATED ALWAYS AS (
	CASE WHEN role IN ('user', 'assistant') AND trim(content) <> '' AND chat <> ''
		AND session = channel || ':' || chat
	THEN 'c' || lower(hex(channel || ':' || chat)) || '0' END) VIRTUAL;
-- Paging through one chat's transcript (read_history) walks this index.
CREATE INDEX messages_session_id ON messages (session, id);
-- #if fts5
CREATE VIEW transcript AS SELECT id, content, transcript_key FROM messages WHERE transcript_key IS NOT NULL;
CREATE VIRTUAL TABLE transcript_fts USING fts5 (
	content,
	transcript_key,
	content = 'transcript',
	content_rowid = 'id',
	tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER transcript_fts_insert AFTER INSERT ON messages WHEN new.transcript_key IS NOT NULL BEGIN
	INSERT INTO transcript_fts (rowid, content, transcript_key) VALUES (new.id, new.content, new.transcript_key);
END;
CREATE TRIGGER transcript_fts_delete AFTER DELETE ON messages WHEN old.transcript_key IS NOT NULL BEGIN
	INSERT INTO transcript_fts (transcript_fts, rowid, content, transcript_key)
	VALUES ('delete', old.id, old.content, old.transcript_key);
END;
CREATE TRIGGER transcript_fts_update_old AFTER UPDATE OF session, role, content, channel, chat ON messages
	WHEN old.transcript_key IS NOT NULL BEGIN
	INSERT INTO transcript_fts (transcript_fts, rowid, content, transcript_key)
	VALUES ('delete', old.id, old.content, old.transcript_key);
END;
CREATE TRIGGER transcript_fts_update_new AFTER UPDATE OF session, role, content, channel, chat ON messages
	WHEN new.transcript_key IS NOT NULL BEGIN
	INSERT INTO transcript_fts (rowid, content, transcript_key) VALUES (new.id, new.content, new.transcript_key);
END;
INSERT INTO transcript_fts (transcript_fts) VALUES ('rebuild');
-- #else
CREATE VIRTUAL TABLE transcript_fts USING fts4 (
	content="messages",
	content,
	transcript_key,
	tokenize=unicode61 "remove_diacritics=2"
);
CREATE TRIGGER transcript_fts_insert AFTER INSERT ON messages WHEN new.transcript_key IS NOT NULL BEGIN
	INSERT INTO transcript_fts (docid, content, transcript_key) VALUES (new.id, new.content, new.transcript_key);
END;
CREATE TRIGGER transcript_fts_delete BEFORE DELETE ON messages WHEN old.transcript_key IS NOT NULL BEGIN
	DELETE FROM transcript_fts WHERE docid = old.id;
END;
CREATE TRIGGER transcript_fts_update_old BEFORE UPDATE OF session, role, content, channel, chat ON messages
	WHEN old.transcript_key IS NOT NULL BEGIN
	DELETE FROM transcript_fts WHERE docid = old.id;
END;
CREATE TRIGGER transcript_fts_update_new AFTER UPDATE OF session, role, content, channel, chat ON messages
	WHEN new.transcript_key IS NOT NULL BEGIN
	INSERT INTO transcript_fts (docid, content, transcript_key) VALUES (new.id, new.content, new.transcript_key);
END;
INSERT INTO transcript_fts (docid, content, transcript_key)
	SELECT id, content, transcript_key FROM messages WHERE transcript_key IS NOT NULL;
-- #endif
