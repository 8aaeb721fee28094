-- A message's turn that has started keeps its inbox row until the turn ends
-- (answered, failed or paused), marked with when it started and the tools
-- with side effects it ran. A process that dies mid-turn leaves the row; the
-- one that takes it over re-runs the turn when nothing with side effects
-- ran, and otherwise tells the chat the answer was interrupted.
ALTER TABLE inbox ADD COLUMN started_at BIGINT;
ALTER TABLE inbox ADD COLUMN ran TEXT;
