-- Long-term memory per user, per-session task/execution state and compaction
-- summaries, answer feedback and correction rules. Times added here are epoch
-- milliseconds (UTC).

CREATE TABLE memories (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    platform     TEXT NOT NULL,
    user_id      INTEGER NOT NULL,
    kind         TEXT NOT NULL,               -- preference | decision | scenario | persona | fact
    content      TEXT NOT NULL,
    terms        TEXT NOT NULL,               -- search terms (words, CJK bigrams), each prefixed by the owner
    source_ref   TEXT NOT NULL,               -- where it came from, e.g. chat:<session>#<from>-<to>
    importance   REAL NOT NULL DEFAULT 0.5,
    access_count INTEGER NOT NULL DEFAULT 0,
    last_access  INTEGER,
    expires_at   INTEGER,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
CREATE INDEX memories_owner_kind ON memories (platform, user_id, kind, updated_at);
CREATE INDEX memories_owner_recent ON memories (platform, user_id, updated_at);
CREATE INDEX memories_expiry ON memories (expires_at) WHERE expires_at IS NOT NULL;

-- Full-text index over `terms`. The terms are pre-segmented by the gateway, so
-- the plain `ascii` tokenizer (every non-ASCII character is a token character)
-- keeps CJK bigrams intact.
CREATE VIRTUAL TABLE memories_fts USING fts5 (terms, content = 'memories', content_rowid = 'id', tokenize = 'ascii');
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, terms) VALUES (new.id, new.terms);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, terms) VALUES ('delete', old.id, old.terms);
END;
CREATE TRIGGER memories_fts_update AFTER UPDATE OF terms ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, terms) VALUES ('delete', old.id, old.terms);
    INSERT INTO memories_fts (rowid, terms) VALUES (new.id, new.terms);
END;

-- Counts L1 atoms added since the last L2/L3 refresh.
CREATE TABLE memory_owners (
    platform       TEXT NOT NULL,
    user_id        INTEGER NOT NULL,
    l1_since_layer INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (platform, user_id)
);

CREATE TABLE session_state (
    session_id        TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    task_state        TEXT,                   -- JSON: goal, open loops, important facts, last decision
    execution_state   TEXT,                   -- JSON: goal, status, steps, observations, question
    summary           TEXT,                   -- [conversation summary] of the compacted history
    extracted_through INTEGER NOT NULL DEFAULT 0, -- messages.id memories were extracted up to
    updated_at        INTEGER NOT NULL
);

-- 1: folded into the session's summary by compaction (kept for /memory trace).
ALTER TABLE messages ADD COLUMN archived INTEGER NOT NULL DEFAULT 0;

CREATE TABLE feedback (
    id         TEXT PRIMARY KEY,              -- short random id carried by the buttons
    session_id TEXT NOT NULL,
    platform   TEXT NOT NULL,
    user_id    INTEGER NOT NULL,
    question   TEXT NOT NULL,                 -- excerpt of what the user asked
    answer     TEXT NOT NULL,                 -- excerpt of the answer
    rating     INTEGER,                       -- 1 helpful, -1 not helpful, NULL not rated
    created_at INTEGER NOT NULL,
    rated_at   INTEGER
);
CREATE INDEX feedback_owner ON feedback (platform, user_id, rated_at);

CREATE TABLE correction_rules (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    platform   TEXT NOT NULL,
    user_id    INTEGER NOT NULL,
    rule       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX correction_rules_owner ON correction_rules (platform, user_id, expires_at);
