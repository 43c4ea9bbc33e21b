-- An inbound item links to the first message of the turn that answers it,
-- written in the same transaction as that message: a started item always
-- has its message, and items answered by one turn share it.
ALTER TABLE inbox ADD COLUMN message_id INTEGER REFERENCES messages (id);

-- Items started before this link existed cannot tell how far their turn
-- got; they are answered afresh.
UPDATE inbox SET state = 'pending' WHERE state = 'started';
