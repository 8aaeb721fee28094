-- Switchboard's first schema (SQLite). Times are epoch milliseconds (UTC); ids are UUID text.

CREATE TABLE users (
    platform     TEXT NOT NULL,
    user_id      INTEGER NOT NULL,
    display_name TEXT NOT NULL,
    admitted_at  INTEGER NOT NULL,
    admitted_by  TEXT NOT NULL,            -- 'pairing' | 'operator'
    PRIMARY KEY (platform, user_id)
);

CREATE TABLE pairing_codes (
    code         TEXT PRIMARY KEY,
    platform     TEXT NOT NULL,
    user_id      INTEGER NOT NULL,
    display_name TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    status       TEXT NOT NULL DEFAULT 'pending'   -- pending | approved | denied
);
CREATE INDEX pairing_codes_user ON pairing_codes (platform, user_id, status);

CREATE TABLE sessions (
    id         TEXT PRIMARY KEY,
    platform   TEXT NOT NULL,
    chat_id    INTEGER NOT NULL,
    thread_id  INTEGER NOT NULL DEFAULT 0,  -- 0: no thread (no platform uses 0)
    user_id    INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    UNIQUE (platform, chat_id, thread_id, user_id)
);

CREATE TABLE messages (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    payload    TEXT NOT NULL,               -- JSON of llm::Message
    created_at INTEGER NOT NULL
);
CREATE INDEX messages_session ON messages (session_id, id);

CREATE TABLE approvals (
    id              TEXT PRIMARY KEY,
    session_id      TEXT NOT NULL,
    tool_name       TEXT NOT NULL,
    tool_display    TEXT NOT NULL,
    arguments       TEXT NOT NULL,          -- exact JSON the decision binds to
    summary         TEXT NOT NULL,          -- what the card showed
    requester       INTEGER NOT NULL,
    requester_name  TEXT NOT NULL,
    chat            TEXT NOT NULL,          -- JSON ChatAddress
    card_message_id INTEGER,
    status          TEXT NOT NULL DEFAULT 'pending', -- pending | allowed | always | denied | expired | edited
    decided_by      INTEGER,
    decided_at      INTEGER,
    reason          TEXT,
    created_at      INTEGER NOT NULL,
    expires_at      INTEGER NOT NULL
);
CREATE INDEX approvals_pending ON approvals (status, expires_at);

CREATE TABLE approval_rules (
    id         TEXT PRIMARY KEY,
    platform   TEXT NOT NULL,
    user_id    INTEGER NOT NULL,
    tool_name  TEXT NOT NULL,
    pattern    TEXT NOT NULL,               -- exact arguments JSON
    created_at INTEGER NOT NULL,
    UNIQUE (platform, user_id, tool_name, pattern)
);

CREATE TABLE tasks (
    id                TEXT PRIMARY KEY,
    session_id        TEXT NOT NULL,
    tool_name         TEXT NOT NULL,
    arguments         TEXT NOT NULL,
    status            TEXT NOT NULL,        -- queued | running | succeeded | failed | cancelled | interrupted
    stage             TEXT NOT NULL DEFAULT '',
    detail            TEXT NOT NULL DEFAULT '',
    percent           INTEGER,
    result            TEXT,
    chat              TEXT NOT NULL,        -- JSON ChatAddress of the originating chat
    status_message_id INTEGER,
    created_at        INTEGER NOT NULL,
    finished_at       INTEGER
);
CREATE INDEX tasks_session ON tasks (session_id, created_at);

CREATE TABLE usage (
    platform       TEXT NOT NULL,
    user_id        INTEGER NOT NULL,
    day            TEXT NOT NULL,
    turns          INTEGER NOT NULL DEFAULT 0,
    input_tokens   INTEGER NOT NULL DEFAULT 0,
    output_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_read     INTEGER NOT NULL DEFAULT 0,
    cache_write    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (platform, user_id, day)
);

CREATE TABLE system_events (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    at     INTEGER NOT NULL,
    kind   TEXT NOT NULL,
    detail TEXT NOT NULL                    -- JSON
);
