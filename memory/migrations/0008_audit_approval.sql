-- What came of asking about a tool call: approved, denied, timed out or
-- not asked; empty when nobody was asked (and for calls recorded before).
ALTER TABLE audit ADD COLUMN approval TEXT NOT NULL DEFAULT '';
