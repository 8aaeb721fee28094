-- Which channel a thread was opened in, where a thread is a chat of its own
-- (Discord): a thread without a CHATS_FILE entry of its own takes its
-- channel's. Learned from messages and presses; read at start, so a schedule
-- or a resumed turn in the thread after a restart is bound like the thread.
CREATE TABLE chat_parents (
    platform   TEXT NOT NULL,
    chat_id    BIGINT NOT NULL,
    parent_id  BIGINT NOT NULL,
    PRIMARY KEY (platform, chat_id)
);
