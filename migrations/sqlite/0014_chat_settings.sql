-- Settings a session's users change from the chat (`/verbose`, `/queue`). A
-- missing row or a NULL column means the operator's default (`CHAT_VERBOSITY`,
-- `QUEUE_MODE`).
CREATE TABLE chat_settings (
    session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    verbosity  TEXT,                        -- off | tools | full
    queue_mode TEXT,                        -- followup | collect | interrupt
    updated_at INTEGER NOT NULL
);
