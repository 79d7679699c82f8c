-- Servers the bot left, per-server limits, and the count of each member's commands.

-- A server that removed the bot (or was deleted): its announcements post nothing while it
-- is here; a job forgets everything of it at `forget_at` unless the bot comes back first.
CREATE TABLE bot_guilds_left (
    guild_id      INTEGER PRIMARY KEY,
    left_at       REAL    NOT NULL,
    forget_at     REAL    NOT NULL,
    forget_job_id INTEGER              -- the scheduler job that forgets it
);

-- What an operator raised (or lowered) for one server; NULL: the instance's setting.
CREATE TABLE bot_guild_limits (
    guild_id            INTEGER PRIMARY KEY,
    max_announcements   INTEGER,
    max_templates       INTEGER,
    files_max_bytes     INTEGER,
    min_repeat_seconds  REAL,
    commands_per_minute INTEGER,
    updated_at          REAL    NOT NULL
);

-- Commands used per member, server and minute (epoch seconds // 60), shared by every
-- instance; a member's counts of past minutes are deleted at their next command.
CREATE TABLE bot_command_counts (
    guild_id INTEGER NOT NULL,
    user_id  INTEGER NOT NULL,
    minute   INTEGER NOT NULL,
    count    INTEGER NOT NULL,
    PRIMARY KEY (guild_id, user_id, minute)
);
