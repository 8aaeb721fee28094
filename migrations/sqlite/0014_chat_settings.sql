-- Settings a session's users change from the chat (`/verbose`). A missing row
-- or a NULL column means the operator's default (`CHAT_VERBOSITY`).
CREATE TABLE chat_settings (
    session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    verbosity  TEXT,                        -- off | tools | full
    updated_at INTEGER NOT NULL
);
