-- Switchboard's first schema (PostgreSQL). Times are epoch milliseconds (UTC);
-- ids are UUID text; platform ids are BIGINT (Discord snowflakes fit).

CREATE TABLE users (
    platform     TEXT NOT NULL,
    user_id      BIGINT NOT NULL,
    display_name TEXT NOT NULL,
    admitted_at  BIGINT NOT NULL,
    admitted_by  TEXT NOT NULL,
    PRIMARY KEY (platform, user_id)
);

CREATE TABLE pairing_codes (
    code         TEXT PRIMARY KEY,
    platform     TEXT NOT NULL,
    user_id      BIGINT NOT NULL,
    display_name TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    status       TEXT NOT NULL DEFAULT 'pending'
);
CREATE INDEX pairing_codes_user ON pairing_codes (platform, user_id, status);

CREATE TABLE sessions (
    id         TEXT PRIMARY KEY,
    platform   TEXT NOT NULL,
    chat_id    BIGINT NOT NULL,
    thread_id  BIGINT NOT NULL DEFAULT 0,
    user_id    BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (platform, chat_id, thread_id, user_id)
);

CREATE TABLE messages (
    id         BIGSERIAL PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    payload    TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX messages_session ON messages (session_id, id);

CREATE TABLE approvals (
    id              TEXT PRIMARY KEY,
    session_id      TEXT NOT NULL,
    tool_name       TEXT NOT NULL,
    tool_display    TEXT NOT NULL,
    arguments       TEXT NOT NULL,
    summary         TEXT NOT NULL,
    requester       BIGINT NOT NULL,
    requester_name  TEXT NOT NULL,
    chat            TEXT NOT NULL,
    card_message_id BIGINT,
    status          TEXT NOT NULL DEFAULT 'pending',
    decided_by      BIGINT,
    decided_at      BIGINT,
    reason          TEXT,
    created_at      BIGINT NOT NULL,
    expires_at      BIGINT NOT NULL
);
CREATE INDEX approvals_pending ON approvals (status, expires_at);

CREATE TABLE approval_rules (
    id         TEXT PRIMARY KEY,
    platform   TEXT NOT NULL,
    user_id    BIGINT NOT NULL,
    tool_name  TEXT NOT NULL,
    pattern    TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (platform, user_id, tool_name, pattern)
);

CREATE TABLE tasks (
    id                TEXT PRIMARY KEY,
    session_id        TEXT NOT NULL,
    tool_name         TEXT NOT NULL,
    arguments         TEXT NOT NULL,
    status            TEXT NOT NULL,
    stage             TEXT NOT NULL DEFAULT '',
    detail            TEXT NOT NULL DEFAULT '',
    percent           BIGINT,
    result            TEXT,
    chat              TEXT NOT NULL,
    status_message_id BIGINT,
    created_at        BIGINT NOT NULL,
    finished_at       BIGINT
);
CREATE INDEX tasks_session ON tasks (session_id, created_at);

CREATE TABLE usage (
    platform       TEXT NOT NULL,
    user_id        BIGINT NOT NULL,
    day            TEXT NOT NULL,
    turns          BIGINT NOT NULL DEFAULT 0,
    input_tokens   BIGINT NOT NULL DEFAULT 0,
    output_tokens  BIGINT NOT NULL DEFAULT 0,
    cache_read     BIGINT NOT NULL DEFAULT 0,
    cache_write    BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (platform, user_id, day)
);

CREATE TABLE system_events (
    id     BIGSERIAL PRIMARY KEY,
    at     BIGINT NOT NULL,
    kind   TEXT NOT NULL,
    detail TEXT NOT NULL
);
