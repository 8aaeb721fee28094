-- Voice replies (`/voice on|off`, `TTS_BASE_URL`): the session's choice
-- (NULL: reply in kind — a voice note gets a voice reply) and whether its
-- latest message was a voice note, read when its answer (fresh or resumed
-- after an approval) is delivered.
ALTER TABLE chat_settings ADD COLUMN voice TEXT;              -- on | off
ALTER TABLE chat_settings ADD COLUMN voice_in INTEGER NOT NULL DEFAULT 0;
