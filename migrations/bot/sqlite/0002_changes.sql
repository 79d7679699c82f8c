-- Announcements that change after they are scheduled: edited (also once posted), paused,
-- skipped, ended by `until`; the history of those changes; members' own timezones.
--
-- SQLite cannot alter a CHECK constraint, so the two tables whose states grow are rebuilt with
-- the same rows (inside this migration's transaction: all of it or nothing).

CREATE TABLE bot_announcements_v2 (
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
    repeat_kind      TEXT,               -- NULL for a one-off; the rule's kind (checked in code)
    repeat_cron      TEXT,
    repeat_every     REAL,
    repeat_words     TEXT,
    job_id           INTEGER,            -- a one-off announcement's delivery job
    schedule_name    TEXT,               -- a recurring announcement's schedule
    state            TEXT    NOT NULL
                     CHECK (state IN ('scheduled', 'sent', 'failed', 'paused', 'canceled',
                                      'done')),
    failure          TEXT,
    last_message_id  INTEGER,
    created_at       REAL    NOT NULL,
    updated_at       REAL    NOT NULL,
    until_ts         REAL,               -- a recurring one posts nothing after this, then is done
    revision         INTEGER NOT NULL DEFAULT 1,  -- bumped by every change to what a post shows
    UNIQUE (guild_id, local_id)
);
INSERT INTO bot_announcements_v2 (
    id, guild_id, local_id, channel_id, author_id, content, mention, allowed_mentions,
    first_ts, timezone, repeat_kind, repeat_cron, repeat_every, repeat_words, job_id,
    schedule_name, state, failure, last_message_id, created_at, updated_at)
SELECT
    id, guild_id, local_id, channel_id, author_id, content, mention, allowed_mentions,
    first_ts, timezone, repeat_kind, repeat_cron, repeat_every, repeat_words, job_id,
    schedule_name, state, failure, last_message_id, created_at, updated_at
FROM bot_announcements;
DROP TABLE bot_announcements;
ALTER TABLE bot_announcements_v2 RENAME TO bot_announcements;
CREATE INDEX bot_announcements_guild ON bot_announcements (guild_id, state);

CREATE TABLE bot_deliveries_v2 (
    id               INTEGER PRIMARY KEY,
    announcement_id  INTEGER NOT NULL,
    fire_ts          REAL    NOT NULL,
    job_id           INTEGER,
    nonce            TEXT    NOT NULL,
    state            TEXT    NOT NULL
                     CHECK (state IN ('sending', 'sent', 'failed', 'missed', 'skipped')),
    first_attempt_at REAL    NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 1,
    message_id       INTEGER,
    sent_at          REAL,
    late_by          REAL,
    error            TEXT,
    revision         INTEGER,            -- the announcement's revision the posted message shows
    update_error     TEXT,               -- why the posted message could not be brought up to date
    UNIQUE (announcement_id, fire_ts)
);
INSERT INTO bot_deliveries_v2 (
    id, announcement_id, fire_ts, job_id, nonce, state, first_attempt_at, attempts,
    message_id, sent_at, late_by, error, revision)
SELECT
    id, announcement_id, fire_ts, job_id, nonce, state, first_attempt_at, attempts,
    message_id, sent_at, late_by, error, CASE WHEN state = 'sent' THEN 1 END
FROM bot_deliveries;
DROP TABLE bot_deliveries;
ALTER TABLE bot_deliveries_v2 RENAME TO bot_deliveries;

-- Who changed what, and when: shown by /info.
CREATE TABLE bot_history (
    id               INTEGER PRIMARY KEY,
    announcement_id  INTEGER NOT NULL,
    at               REAL    NOT NULL,
    actor_id         INTEGER,            -- the member; NULL when the bot itself made the change
    action           TEXT    NOT NULL
                     CHECK (action IN ('created', 'edited', 'paused', 'resumed', 'skipped',
                                       'canceled', 'ended', 'failed', 'post_updated',
                                       'post_update_failed')),
    detail           TEXT    NOT NULL DEFAULT ''   -- what changed, in words
);
CREATE INDEX bot_history_announcement ON bot_history (announcement_id, id);
INSERT INTO bot_history (announcement_id, at, actor_id, action)
SELECT id, created_at, author_id, 'created' FROM bot_announcements;

-- A member's own default timezone for the times they type (any server).
CREATE TABLE bot_member_settings (
    user_id    INTEGER PRIMARY KEY,
    timezone   TEXT    NOT NULL,
    updated_at REAL    NOT NULL
);
