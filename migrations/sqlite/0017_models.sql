-- The model catalogue (`switchboard model add|remove|list|default|fallback`):
-- endpoints by name, their key by environment variable name only (never the
-- key), prices per million tokens in USD, capabilities. The LLM_* variables
-- seed it (`seeded` = 1). `role` marks the default and its fallbacks.
CREATE TABLE models (
    name              TEXT PRIMARY KEY,
    api               TEXT NOT NULL,            -- openai | anthropic | gemini
    base_url          TEXT NOT NULL,
    key_env           TEXT,
    context_window    INTEGER,
    price_input       REAL NOT NULL DEFAULT 0,
    price_output      REAL NOT NULL DEFAULT 0,
    price_cache_read  REAL NOT NULL DEFAULT 0,
    price_cache_write REAL NOT NULL DEFAULT 0,
    vision            INTEGER NOT NULL DEFAULT 0,
    tools             INTEGER NOT NULL DEFAULT 1,
    reasoning         INTEGER NOT NULL DEFAULT 0,
    role              TEXT,                     -- default | fallback
    rank              INTEGER NOT NULL DEFAULT 0,
    seeded            INTEGER NOT NULL DEFAULT 0,
    updated_at        INTEGER NOT NULL
);

-- The model a session's users chose with `/model`.
ALTER TABLE chat_settings ADD COLUMN model TEXT;

-- Usage by model, priced when recorded (a later price edit does not rewrite
-- it): cost in micro-dollars.
CREATE TABLE usage_models (
    platform      TEXT NOT NULL,
    user_id       INTEGER NOT NULL,
    day           TEXT NOT NULL,
    model         TEXT NOT NULL,
    turns         INTEGER NOT NULL DEFAULT 0,
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cache_read    INTEGER NOT NULL DEFAULT 0,
    cache_write   INTEGER NOT NULL DEFAULT 0,
    cost_micros   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (platform, user_id, day, model)
);
CREATE INDEX usage_models_day ON usage_models (day);
