-- The message that carries a rateable answer's 👍/👎 buttons, so a reaction
-- a user puts on that message counts as the same feedback (REACTIONS).
ALTER TABLE feedback ADD COLUMN chat_id INTEGER;
ALTER TABLE feedback ADD COLUMN message_id INTEGER;
CREATE INDEX feedback_message ON feedback (platform, chat_id, message_id);
