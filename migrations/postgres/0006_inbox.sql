-- Accepted inbound messages not yet taken up by their session: the platform
-- has been told they arrived (Telegram's offset moved on), so they must
-- survive a restart. A row is deleted when its turn starts. `owner` is the
-- process holding it; a lapsed lease means that process is gone.
CREATE TABLE inbox (
    id          BIGSERIAL PRIMARY KEY,
    platform    TEXT NOT NULL,
    message     TEXT NOT NULL,              -- JSON InboundMessage
    owner       TEXT NOT NULL,
    lease_until BIGINT NOT NULL,
    received_at BIGINT NOT NULL
);
CREATE INDEX inbox_lease ON inbox (lease_until);
