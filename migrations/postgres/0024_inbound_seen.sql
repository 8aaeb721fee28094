-- Messages a platform may deliver more than once (Telegram webhooks retry a
-- delivery whose answer was slow or lost; a restart forwards what the
-- webhook spool kept): the first sight of each is recorded, across
-- processes, and a repeat is dropped. Rows older than a day are pruned.
CREATE TABLE inbound_seen (
    platform   TEXT NOT NULL,
    chat       BIGINT NOT NULL,
    message_id BIGINT NOT NULL,
    seen_at    BIGINT NOT NULL,
    PRIMARY KEY (platform, chat, message_id)
);
CREATE INDEX inbound_seen_at ON inbound_seen (seen_at);
