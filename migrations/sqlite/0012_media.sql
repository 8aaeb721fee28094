-- Files users sent, filed by content hash under DATA_DIR/media (ab/abcdef…):
-- the same file twice is stored once. History rows reference the hash, never
-- the bytes. A file unused past the retention period is collected.
CREATE TABLE media (
    hash         TEXT PRIMARY KEY,
    mime         TEXT NOT NULL,
    size         INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER NOT NULL
);
CREATE INDEX media_last_used ON media (last_used_at);

-- Bytes each user's attachments took, for the daily quota (rows older than
-- two days are pruned).
CREATE TABLE media_downloads (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    platform TEXT NOT NULL,
    user_id  BIGINT NOT NULL,
    bytes    INTEGER NOT NULL,
    at       INTEGER NOT NULL
);
CREATE INDEX media_downloads_user ON media_downloads (platform, user_id, at);
