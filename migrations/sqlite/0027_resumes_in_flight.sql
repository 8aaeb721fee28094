-- A paused turn resumed after its card was decided runs without a row of its
-- own (the paused state was claimed): this marks it while it runs, leased like
-- the inbox, so that when its process stops or dies the next one tells the
-- chat the answer was interrupted (the call it paused on may have run, so it
-- is not run again).
CREATE TABLE resumes_in_flight (
    approval_id  TEXT PRIMARY KEY,
    owner        TEXT NOT NULL,
    lease_until  BIGINT NOT NULL,
    conversation TEXT NOT NULL,
    tool         TEXT NOT NULL,
    allowed      BIGINT NOT NULL,
    started_at   BIGINT NOT NULL
);
CREATE INDEX resumes_in_flight_lease ON resumes_in_flight (lease_until);
