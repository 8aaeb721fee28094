-- What a paused turn needs besides its messages to resume as it would have
-- gone on: the round it paused in, its system-prompt additions, the plain
-- input (history never stores recalled memories) and the history row ids
-- (so a compaction during the resumed part folds the right rows). JSON.
ALTER TABLE turn_states ADD COLUMN context TEXT;
