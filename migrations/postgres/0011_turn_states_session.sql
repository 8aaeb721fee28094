-- A paused turn is found by its session: the requester's next message may be
-- the edit its approval was sent back for.
CREATE INDEX turn_states_session ON turn_states (session_id);
