-- The portfolio ledger: each user's positions and every change made to them.
-- Amounts are exact decimals stored as text (8 places at most); times are epoch
-- milliseconds (UTC).
CREATE TABLE portfolio_positions (
    platform   TEXT NOT NULL,
    user_id    BIGINT NOT NULL,
    symbol     TEXT NOT NULL,
    quantity   TEXT NOT NULL,
    cost       TEXT NOT NULL,              -- total cost basis (average-cost method)
    currency   TEXT NOT NULL DEFAULT '',
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (platform, user_id, symbol)
);

CREATE TABLE portfolio_trades (
    id         BIGSERIAL PRIMARY KEY,
    platform   TEXT NOT NULL,
    user_id    BIGINT NOT NULL,
    symbol     TEXT NOT NULL,
    operation  TEXT NOT NULL,              -- buy | sell | set | remove
    quantity   TEXT,
    price      TEXT,                       -- price, or average cost for set
    fee        TEXT,
    realized   TEXT,                       -- profit or loss of a sale
    currency   TEXT NOT NULL DEFAULT '',
    note       TEXT,
    session_id TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX portfolio_trades_owner ON portfolio_trades (platform, user_id, id);
