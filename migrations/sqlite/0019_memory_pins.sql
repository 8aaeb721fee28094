-- Garbage collection by value: a memory the user pinned (/memory pin) is never
-- collected (1 pinned, 0 not).
ALTER TABLE memories ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
