-- The planner's plan, one per session: typed steps (tool, inputs, expected
-- result, state, bounded observation, retries) and the execution phase
-- (planning, executing, waiting_user, final_answer), kept as a row so a plan
-- waiting on the user resumes after a restart and the console can show it.
-- `body` is the plan as JSON; goal, phase and revision are columns for lists.
-- A plan kept earlier inside session_state.execution_state moves here on
-- its first read.
CREATE TABLE plans (
    session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    goal       TEXT NOT NULL,
    phase      TEXT NOT NULL,
    revision   BIGINT NOT NULL,
    body       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX plans_phase ON plans (phase, updated_at);
