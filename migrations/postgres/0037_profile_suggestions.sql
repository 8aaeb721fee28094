-- Profile-update suggestions from reflection notes: what a note found that
-- should change the user's profile, shown verbatim on a card in their direct
-- messages with Apply / Dismiss. `fingerprint` (the text folded) keeps the
-- same suggestion from being proposed again, whatever became of it.
CREATE TABLE profile_suggestions (
    id          TEXT PRIMARY KEY,
    platform    TEXT NOT NULL,
    user_id     BIGINT NOT NULL,
    content     TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    status      TEXT NOT NULL DEFAULT 'pending',  -- pending | applied | dismissed
    chat_id     BIGINT,                           -- where its card was posted
    created_at  BIGINT NOT NULL,
    posted_at   BIGINT,
    decided_at  BIGINT,
    memory_id   BIGINT,                           -- the memory Apply wrote
    UNIQUE (platform, user_id, fingerprint)
);
CREATE INDEX profile_suggestions_unposted ON profile_suggestions (platform, user_id, posted_at);
