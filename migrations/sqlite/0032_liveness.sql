-- Liveness instead of leases: a row's `owner` is a process id, and whether
-- that process is alive is asked of the database (PostgreSQL: a session-level
-- advisory lock it holds; SQLite: a lock file beside the database), so a dead
-- process's work is taken over in seconds. `lease_until` is no longer read.
--
-- inbox.attempts: how many times a turn answering the message started; a
-- message whose turn started twice without ending (the process died both
-- times) is set aside instead of taken again.
-- inbox.answered_at: when the answer began to reach the chat; a process that
-- dies after that is not re-run (the chat is told the answer was cut short).
ALTER TABLE inbox ADD COLUMN attempts BIGINT NOT NULL DEFAULT 0;
ALTER TABLE inbox ADD COLUMN answered_at BIGINT;
CREATE INDEX inbox_owner ON inbox (owner);
CREATE INDEX resumes_in_flight_owner ON resumes_in_flight (owner);
-- The process running an unfinished task.
ALTER TABLE tasks ADD COLUMN owner TEXT;
CREATE INDEX tasks_running_owner ON tasks (owner) WHERE finished_at IS NULL;
