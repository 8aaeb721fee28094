-- Durable turns: paused turns as rows, ask_user waits, task leases and notify
-- policies, schedules. Times added here are epoch milliseconds (UTC).

CREATE TABLE turn_states (
    id           TEXT PRIMARY KEY,
    session_id   TEXT NOT NULL,
    approval_id  TEXT NOT NULL UNIQUE,       -- what the turn waits for
    origin       TEXT NOT NULL,              -- JSON: session key, chat, user, reply_to
    messages     TEXT NOT NULL,              -- JSON Vec<Message>: the conversation so far
    new_from     BIGINT NOT NULL,           -- index of this turn's first message in `messages`
    remaining    TEXT NOT NULL,              -- JSON Vec<ToolCall>: the first one awaits the approval
    created_at   BIGINT NOT NULL
);

ALTER TABLE sessions ADD COLUMN waiting_question TEXT;

ALTER TABLE tasks ADD COLUMN notify TEXT NOT NULL DEFAULT 'done';   -- done | changes | silent
ALTER TABLE tasks ADD COLUMN lease_until BIGINT NOT NULL DEFAULT 0; -- owner refreshes while running

CREATE TABLE schedules (
    id            TEXT PRIMARY KEY,
    session_id    TEXT NOT NULL,
    origin        TEXT NOT NULL,             -- JSON: session key, chat, user
    kind          TEXT NOT NULL,             -- at | every | cron
    spec          TEXT NOT NULL,             -- RFC 3339 time | seconds | cron expression
    timezone      TEXT NOT NULL,
    prompt        TEXT NOT NULL,             -- what the agent is asked to do when it fires
    missed        TEXT NOT NULL DEFAULT 'run_once', -- run_once | skip
    next_run_at   BIGINT,                   -- NULL once a one-off has fired
    last_fired_at BIGINT,
    fired_count   BIGINT NOT NULL DEFAULT 0,
    active        BIGINT NOT NULL DEFAULT 1,
    created_at    BIGINT NOT NULL
);
CREATE INDEX schedules_due ON schedules (active, next_run_at);
