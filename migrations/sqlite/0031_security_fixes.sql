-- Issue 38. Web console sessions ended on the server (sign-out): a signed
-- cookie is refused while its session id is listed here; rows go once the
-- cookie would have expired anyway.
CREATE TABLE web_revoked_sessions (
    nonce       TEXT PRIMARY KEY,
    expires_at  BIGINT NOT NULL
);

-- A catalogue model's base URL is stored without its credentials: this
-- names the variable holding the URL with them (like `key_env` for keys).
ALTER TABLE models ADD COLUMN url_env TEXT;
