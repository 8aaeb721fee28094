-- What `switchboard mcp` (another process, no platform adapters) asks the
-- running gateway to post: a notice, an approval card (the approval itself is
-- a row in `approvals`), or a question whose reply is written back here. Any
-- gateway process running the target platform claims a row (the conditional
-- update makes one the sender) and records the message it sent.
CREATE TABLE outbox (
    id            TEXT PRIMARY KEY,       -- the client's request id, hashed
    kind          TEXT NOT NULL,          -- notify | approval | ask
    platform      TEXT NOT NULL,
    chat          TEXT NOT NULL,          -- JSON ChatAddress
    body          TEXT NOT NULL,          -- the text (notify, ask) or the approval id
    status        TEXT NOT NULL DEFAULT 'queued', -- queued | sending | sent | failed | answered | expired
    claimed_at    BIGINT,
    message_id    BIGINT,                 -- what the gateway sent
    error         TEXT,
    answer        TEXT,                   -- the reply to a question
    answered_by   BIGINT,
    answered_name TEXT,
    created_at    BIGINT NOT NULL,
    expires_at    BIGINT NOT NULL
);
CREATE INDEX outbox_status ON outbox (status, platform);
CREATE INDEX outbox_message ON outbox (platform, message_id);
