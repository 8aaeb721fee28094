-- The web console: the gateway processes sharing this database (each renews
-- its row every 30 s), and indexes for the console's time-ranged counts and
-- audit-log filters.
CREATE TABLE processes (
    id         TEXT PRIMARY KEY,
    host       TEXT NOT NULL,
    pid        BIGINT NOT NULL,
    version    TEXT NOT NULL,
    web        TEXT,                        -- WEB_LISTEN when the console is on
    started_at BIGINT NOT NULL,
    seen_at    BIGINT NOT NULL
);
CREATE INDEX messages_created ON messages (created_at);
CREATE INDEX system_events_kind ON system_events (kind, id);
CREATE INDEX system_events_at ON system_events (at);
CREATE INDEX sessions_updated ON sessions (updated_at);
