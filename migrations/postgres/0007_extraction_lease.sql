-- Idle-session memory extraction is claimed by one process at a time: the
-- claimant sets a lease (epoch ms) with one conditional upsert, and clears it
-- when it moves `extracted_through`. A process that dies while extracting
-- leaves the lease to run out; then any process may claim the session again.
ALTER TABLE session_state ADD COLUMN extract_lease_until BIGINT;
