-- Preference learning on every message: how often a memory was observed, when
-- last, and how sure the learner is (0.0–1.0); and each user's eligible
-- messages since the last learning call (one call per MEMORY_LEARN_EVERY).
ALTER TABLE memories ADD COLUMN seen_count BIGINT NOT NULL DEFAULT 1;
ALTER TABLE memories ADD COLUMN last_seen BIGINT;
ALTER TABLE memories ADD COLUMN confidence DOUBLE PRECISION NOT NULL DEFAULT 0.5;
ALTER TABLE memory_owners ADD COLUMN learn_pending BIGINT NOT NULL DEFAULT 0;
