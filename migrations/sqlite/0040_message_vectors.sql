-- Semantic chat-history search (EMBEDDINGS_*): the embedding of each user and
-- assistant text message, beside the row, keyed by message and model (a
-- change of EMBEDDINGS_MODEL deletes the old model's rows and re-embeds).
-- `embedding` is a BLOB of little-endian f32; NULL marks a message settled
-- without a vector (a tool result, a system row, an empty text, or a text the
-- endpoint refused), so the background worker's queue is simply the messages
-- with no row of the model. `role` ('user', 'assistant', others for skipped
-- rows) lets a search keep to whose messages it covers. The vectors go with
-- their messages (ON DELETE CASCADE: `/clear`, deleted sessions).
CREATE TABLE message_vectors (
    message_id  INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    model       TEXT NOT NULL,
    role        TEXT NOT NULL,
    dim         INTEGER,
    embedding   BLOB,
    embedded_at INTEGER NOT NULL,
    PRIMARY KEY (message_id, model)
);
CREATE INDEX message_vectors_model ON message_vectors (model, message_id);
