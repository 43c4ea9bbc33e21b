-- A provider's own fields of an assistant message (a JSON object: reasoning,
-- reasoning details, signatures), sent back with it in later requests.
ALTER TABLE messages ADD COLUMN extra TEXT;
-- The part of the prompt tokens a provider served from its prompt cache.
ALTER TABLE usage ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0;
