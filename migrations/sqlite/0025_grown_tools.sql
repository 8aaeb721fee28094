-- Tools added from the chat (`http_tool`, `script_tool`), each change
-- approved on a card: the manifest as approved, the script's SHA-256 for a
-- script tool (a changed script must be approved again) and who added it.
-- Every process loads the same set.
CREATE TABLE grown_tools (
    name          TEXT PRIMARY KEY,
    kind          TEXT NOT NULL,
    manifest      TEXT NOT NULL,
    script_sha256 TEXT,
    added_by      TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    revision      BIGINT NOT NULL
);
