-- Long-term memory per user, per-session task/execution state and compaction
-- summaries, answer feedback and correction rules. Times added here are epoch
-- milliseconds (UTC).

CREATE TABLE memories (
    id           BIGSERIAL PRIMARY KEY,
    platform     TEXT NOT NULL,
    user_id      BIGINT NOT NULL,
    kind         TEXT NOT NULL,               -- preference | decision | scenario | persona | fact
    content      TEXT NOT NULL,
    terms        TEXT NOT NULL,               -- search terms (words, CJK bigrams), each prefixed by the owner
    source_ref   TEXT NOT NULL,               -- where it came from, e.g. chat:<session>#<from>-<to>
    importance   DOUBLE PRECISION NOT NULL DEFAULT 0.5,
    access_count BIGINT NOT NULL DEFAULT 0,
    last_access  BIGINT,
    expires_at   BIGINT,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE INDEX memories_owner_kind ON memories (platform, user_id, kind, updated_at);
CREATE INDEX memories_owner_recent ON memories (platform, user_id, updated_at);
CREATE INDEX memories_expiry ON memories (expires_at) WHERE expires_at IS NOT NULL;

-- Full-text index over `terms` (pre-segmented by the gateway, owner-prefixed):
-- a `simple` tsvector, so CJK bigrams and codes stay whole.
CREATE INDEX memories_terms ON memories USING GIN (to_tsvector('simple', terms));

-- Counts L1 atoms added since the last L2/L3 refresh.
CREATE TABLE memory_owners (
    platform       TEXT NOT NULL,
    user_id        BIGINT NOT NULL,
    l1_since_layer BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (platform, user_id)
);

CREATE TABLE session_state (
    session_id        TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    task_state        TEXT,                   -- JSON: goal, open loops, important facts, last decision
    execution_state   TEXT,                   -- JSON: goal, status, steps, observations, question
    summary           TEXT,                   -- [conversation summary] of the compacted history
    extracted_through BIGINT NOT NULL DEFAULT 0, -- messages.id memories were extracted up to
    updated_at        BIGINT NOT NULL
);

-- 1: folded into the session's summary by compaction (kept for /memory trace).
ALTER TABLE messages ADD COLUMN archived BIGINT NOT NULL DEFAULT 0;

CREATE TABLE feedback (
    id         TEXT PRIMARY KEY,              -- short random id carried by the buttons
    session_id TEXT NOT NULL,
    platform   TEXT NOT NULL,
    user_id    BIGINT NOT NULL,
    question   TEXT NOT NULL,                 -- excerpt of what the user asked
    answer     TEXT NOT NULL,                 -- excerpt of the answer
    rating     BIGINT,                       -- 1 helpful, -1 not helpful, NULL not rated
    created_at BIGINT NOT NULL,
    rated_at   BIGINT
);
CREATE INDEX feedback_owner ON feedback (platform, user_id, rated_at);

CREATE TABLE correction_rules (
    id         BIGSERIAL PRIMARY KEY,
    platform   TEXT NOT NULL,
    user_id    BIGINT NOT NULL,
    rule       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX correction_rules_owner ON correction_rules (platform, user_id, expires_at);
