-- Reminders by direct message before each occurrence of an announcement (/edit reminder:,
-- the Remind me button of its posts, /remindme).

-- An announcement whose members may be reminded, and how long before each occurrence
-- (the lead of those who did not choose their own, and of the members Interested in the
-- occurrence's Discord event).
CREATE TABLE bot_reminder_settings (
    announcement_id BIGINT PRIMARY KEY,
    guild_id        BIGINT  NOT NULL,
    before_s        DOUBLE PRECISION    NOT NULL
);

-- The members who asked to be reminded of every later occurrence (the button, /remindme):
-- their own lead (NULL: the announcement's) and the language they asked in (their DMs are
-- said in it).
CREATE TABLE bot_reminder_subscribers (
    announcement_id BIGINT  NOT NULL,
    user_id         BIGINT  NOT NULL,
    guild_id        BIGINT  NOT NULL,
    before_s        DOUBLE PRECISION,
    locale          TEXT,
    created_at      DOUBLE PRECISION    NOT NULL,
    PRIMARY KEY (announcement_id, user_id)
);
CREATE INDEX bot_reminder_subscribers_guild ON bot_reminder_subscribers (guild_id);

-- One reminder per (occurrence, member), never two: the row is written before the direct
-- message is sent ('sending', with its nonce and the job sending it), then 'sent' with the
-- message's id, or 'skipped' with why (DMs closed, left the server, can't see the channel,
-- may not have been delivered). A later run finds it and sends nothing more. An
-- occurrence's rows are folded into bot_reminder_counts once it is well past.
CREATE TABLE bot_reminders (
    announcement_id BIGINT  NOT NULL,
    fire_ts         DOUBLE PRECISION    NOT NULL,
    user_id         BIGINT  NOT NULL,
    guild_id        BIGINT  NOT NULL,
    state           TEXT    NOT NULL,
    reason          TEXT,
    nonce           TEXT    NOT NULL,
    job_id          BIGINT,
    message_id      BIGINT,
    attempt_at      DOUBLE PRECISION    NOT NULL,
    PRIMARY KEY (announcement_id, fire_ts, user_id)
);
CREATE INDEX bot_reminders_guild ON bot_reminders (guild_id);

-- How the reminders of an occurrence went, counted (what /info shows): kept for the last
-- few occurrences of each announcement.
CREATE TABLE bot_reminder_counts (
    announcement_id BIGINT  NOT NULL,
    fire_ts         DOUBLE PRECISION    NOT NULL,
    guild_id        BIGINT  NOT NULL,
    sent            INTEGER NOT NULL DEFAULT 0,
    closed          INTEGER NOT NULL DEFAULT 0,   -- their direct messages are closed (50007)
    left_server     INTEGER NOT NULL DEFAULT 0,   -- no longer a member of the server
    hidden          INTEGER NOT NULL DEFAULT 0,   -- can no longer see the channel
    late            INTEGER NOT NULL DEFAULT 0,   -- the occurrence came before they could be
    failed          INTEGER NOT NULL DEFAULT 0,   -- may not have been delivered
    PRIMARY KEY (announcement_id, fire_ts)
);
CREATE INDEX bot_reminder_counts_guild ON bot_reminder_counts (guild_id);

-- The direct-message channel of each member reminded (Discord's never changes): opened once,
-- not at every reminder (opening many quickly is what Discord limits).
CREATE TABLE bot_dm_channels (
    user_id    BIGINT PRIMARY KEY,
    channel_id BIGINT  NOT NULL
);
