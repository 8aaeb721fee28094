-- A sub-agent role's own history with one user (`"memory": true` in
-- SUBAGENTS_FILE): each finished task and its findings, shown to that role
-- only, for that user only, when it is next asked. The newest 20 are kept
-- per user and role.
CREATE TABLE role_notes (
    id         BIGSERIAL PRIMARY KEY,
    platform   TEXT NOT NULL,
    user_id    BIGINT NOT NULL,
    role       TEXT NOT NULL,
    task       TEXT NOT NULL,
    findings   TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX role_notes_owner ON role_notes (platform, user_id, role, id);
