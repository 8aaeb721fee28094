-- Semantic recall (EMBEDDINGS_*): each memory's embedding beside its row, a
-- `real[]`, with the model that made it and its dimension, so a change of
-- EMBEDDINGS_MODEL is detected and the rows are re-embedded.
-- `embedding_model` NULL: not embedded yet (the background worker's queue);
-- set with a NULL embedding: the endpoint refused this text (skipped).
-- `embedded_at` (epoch ms) lets a recall's in-memory index read only what
-- changed since it last looked.
ALTER TABLE memories ADD COLUMN embedding REAL[];
ALTER TABLE memories ADD COLUMN embedding_model TEXT;
ALTER TABLE memories ADD COLUMN embedding_dim INTEGER;
ALTER TABLE memories ADD COLUMN embedded_at BIGINT;
CREATE INDEX memories_unembedded ON memories (id) WHERE embedding_model IS NULL;
CREATE INDEX memories_owner_embedded ON memories (platform, user_id, embedded_at);
