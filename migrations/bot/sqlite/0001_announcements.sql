-- The bot's own tables, in the same database (and transactions) as the scheduler's.

CREATE TABLE bot_guild_settings (
    guild_id        INTEGER PRIMARY KEY,
    timezone        TEXT,
    manager_role_id INTEGER,
    log_channel_id  INTEGER,
    updated_at      REAL NOT NULL
);

CREATE TABLE bot_announcements (
    id               INTEGER PRIMARY KEY,
    guild_id         INTEGER NOT NULL,
    local_id         INTEGER NOT NULL,   -- the id users see: numbered per guild
    channel_id       INTEGER NOT NULL,
    author_id        INTEGER NOT NULL,
    content          TEXT    NOT NULL,   -- the message exactly as typed
    mention          TEXT,               -- NULL, 'everyone', 'here' or 'role:<id>'
    allowed_mentions TEXT    NOT NULL,   -- JSON: what may ping, decided at scheduling time
    first_ts         REAL    NOT NULL,
    timezone         TEXT    NOT NULL,
    repeat_kind      TEXT CHECK (repeat_kind IN ('cron', 'interval')),
    repeat_cron      TEXT,
    repeat_every     REAL,
    repeat_words     TEXT,
    job_id           INTEGER,            -- a one-off announcement's delivery job
    schedule_name    TEXT,               -- a recurring announcement's schedule
    state            TEXT    NOT NULL
                     CHECK (state IN ('scheduled', 'sent', 'failed', 'paused', 'canceled')),
    failure          TEXT,
    last_message_id  INTEGER,
    created_at       REAL    NOT NULL,
    updated_at       REAL    NOT NULL,
    UNIQUE (guild_id, local_id)
);
CREATE INDEX bot_announcements_guild ON bot_announcements (guild_id, state);

-- One row per occurrence: the message id it produced, so it is posted once.
CREATE TABLE bot_deliveries (
    id               INTEGER PRIMARY KEY,
    announcement_id  INTEGER NOT NULL,
    fire_ts          REAL    NOT NULL,
    job_id           INTEGER,
    nonce            TEXT    NOT NULL,
    state            TEXT    NOT NULL CHECK (state IN ('sending', 'sent', 'failed', 'missed')),
    first_attempt_at REAL    NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 1,
    message_id       INTEGER,
    sent_at          REAL,
    late_by          REAL,
    error            TEXT,
    UNIQUE (announcement_id, fire_ts)
);

CREATE TABLE bot_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
