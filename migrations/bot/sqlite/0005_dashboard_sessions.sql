-- The web dashboard's logins. The session id is only ever in the browser's cookie; the row
-- keeps its SHA-256, so a copy of the database logs no one in. Discord's OAuth2 tokens are
-- not kept: the user's servers are read once, at login.
CREATE TABLE bot_dashboard_sessions (
    id_hash     TEXT    PRIMARY KEY,   -- hex SHA-256 of the cookie's 32 random bytes
    user_id     INTEGER NOT NULL,
    username    TEXT    NOT NULL,
    guild_ids   TEXT    NOT NULL,      -- JSON list: the servers the user was in at login
    csrf_token  TEXT    NOT NULL,      -- sent back with every state-changing request
    flash       TEXT,                  -- the answer to the last change, shown once
    created_at  REAL NOT NULL,
    expires_at  REAL NOT NULL
);
CREATE INDEX bot_dashboard_sessions_expiry ON bot_dashboard_sessions (expires_at);
