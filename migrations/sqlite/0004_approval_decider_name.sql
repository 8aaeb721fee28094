-- The decider's display name, so any process can draw the final card
-- ("Allowed once by Ann") without the press that decided it.
ALTER TABLE approvals ADD COLUMN decided_by_name TEXT;
