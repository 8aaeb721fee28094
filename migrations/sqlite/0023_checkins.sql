-- Opt-in check-ins (/checkins on|off): per user, the time of day in their
-- time zone and the direct-message conversation they are sent in; when the
-- last one was scheduled (the rate limit).
CREATE TABLE checkins (
    platform     TEXT NOT NULL,
    user_id      INTEGER NOT NULL,
    enabled      INTEGER NOT NULL DEFAULT 0,
    at_time      TEXT NOT NULL,                -- HH:MM in timezone
    timezone     TEXT NOT NULL,
    session_id   TEXT NOT NULL,                -- the DM session they are sent in
    origin       TEXT NOT NULL,                -- JSON Conversation of that DM
    last_sent_at INTEGER,
    PRIMARY KEY (platform, user_id)
);
