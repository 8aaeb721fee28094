-- Every file the gateway writes to DATA_DIR/media is recorded, so the
-- retention sweep collects it: what it is (`origin`: a download `inbound`, the
-- `scaled` copy of a downloaded image the model gets, or an image a tool
-- `produced`), whom it was filed for (the session, and the sender of a
-- download) and, for a scaled copy, the original it was made from (it goes
-- when the original goes). Rows from before are all downloads.
ALTER TABLE media ADD COLUMN origin TEXT NOT NULL DEFAULT 'inbound';
ALTER TABLE media ADD COLUMN derived_from TEXT;
ALTER TABLE media ADD COLUMN session_id TEXT;
ALTER TABLE media ADD COLUMN platform TEXT;
ALTER TABLE media ADD COLUMN user_id BIGINT;
CREATE INDEX media_derived_from ON media (derived_from);
