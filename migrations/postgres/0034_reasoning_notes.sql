-- The whole reasoning behind an answer whose shown summary (`/verbose full`,
-- at most 280 characters) was clipped, scrubbed of secrets: read page by page
-- by its asker, in the chat it was given in, through the answer's 💭 button.
-- Kept 30 days.
CREATE TABLE reasoning_notes (
    id         TEXT PRIMARY KEY,              -- short random id carried by the button
    platform   TEXT NOT NULL,
    chat_id    BIGINT NOT NULL,
    user_id    BIGINT NOT NULL,
    content    TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX reasoning_notes_created ON reasoning_notes (created_at);
