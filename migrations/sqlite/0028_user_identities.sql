-- A user's own settings for how the agent presents itself to them in direct
-- messages (`/identity name|persona|style`, when IDENTITY_USER_EDITS=on): a
-- profile laid over the operator's in that user's turns only.
CREATE TABLE user_identities (
    platform   TEXT NOT NULL,
    user_id    BIGINT NOT NULL,
    profile    TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (platform, user_id)
);
