-- The recent-history query reads only live (not archived) rows of a session,
-- newest first: a partial index keeps it flat however many rows compaction
-- archived (it walked every archived row of the session before).
CREATE INDEX messages_live ON messages (session_id, id) WHERE archived = 0;
