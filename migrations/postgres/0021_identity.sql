-- Agent identity: every version of the agent profile (name, persona, style
-- rules) as the operator edited, locked or restored it; the newest is in use.
-- A lock for one user also keeps that user's persona and preference memories.
CREATE TABLE identity_versions (
    version    BIGSERIAL PRIMARY KEY,
    action     TEXT NOT NULL,                -- edit | lock | restore
    profile    TEXT NOT NULL,                -- JSON {name, persona, style}
    platform   TEXT,                         -- a lock of a user: whose memories
    user_id    BIGINT,
    memories   TEXT,                         -- JSON [{kind, content, importance}]
    note       TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL
);
