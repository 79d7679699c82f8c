-- /postnow: an extra post of an announcement's next occurrence, made now (its schedule
-- unchanged), once per use of the command. The command writes the row ('queued', its key the
-- interaction's id: however many gateway sessions see the command, one row) with the job
-- that posts it; the job marks it 'sending' (the time of its first attempt, what it shows)
-- before the send, which carries the row's nonce on every attempt, then 'sent' with the
-- message's id, or 'failed' with why.
CREATE TABLE bot_extra_posts (
    id               INTEGER PRIMARY KEY,
    announcement_id  INTEGER NOT NULL,
    guild_id         INTEGER NOT NULL,
    request_key      TEXT    NOT NULL UNIQUE,
    fire_ts          REAL    NOT NULL,   -- the occurrence whose text it posts
    channel_id       INTEGER NOT NULL,
    nonce            TEXT    NOT NULL,
    state            TEXT    NOT NULL,
    actor_id         INTEGER,
    created_at       REAL    NOT NULL,
    first_attempt_at REAL,
    shown_locale     TEXT,               -- '' for English; NULL before the first attempt
    shown_event_id   INTEGER,
    message_id       INTEGER,
    sent_at          REAL,
    error            TEXT
);
CREATE INDEX bot_extra_posts_announcement ON bot_extra_posts (announcement_id, id);
CREATE INDEX bot_extra_posts_guild ON bot_extra_posts (guild_id);
