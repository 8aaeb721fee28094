-- Reflection notes: when each user's last note was written (or, for a user
-- first seen, when the clock started); claimed by compare-and-set so one
-- process writes each note.
ALTER TABLE memory_owners ADD COLUMN reflected_at BIGINT;
