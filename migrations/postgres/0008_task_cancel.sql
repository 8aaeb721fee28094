-- Cancelling a task another gateway process runs: any process stamps the
-- request (epoch ms) on the row; the process that runs the task sees it at its
-- next housekeeping pass (every 5 s) and stops the task there.
ALTER TABLE tasks ADD COLUMN cancel_requested_at BIGINT;

-- Unfinished tasks are looked at every few seconds (abandoned leases, cancel
-- requests): keep that an index read however many tasks have finished.
CREATE INDEX tasks_unfinished ON tasks (lease_until) WHERE finished_at IS NULL;
