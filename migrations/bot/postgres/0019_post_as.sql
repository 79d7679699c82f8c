-- Posting as the community (/edit as_name: as_avatar:): an announcement's posts come under
-- another name and avatar, through a webhook of their channel that the bot makes once and
-- reuses.

-- Who an announcement posts as: a name, and an avatar (kept as bytes, like its files; NULL:
-- Discord's default webhook avatar). No row: it posts as the bot.
CREATE TABLE bot_post_as (
    announcement_id BIGINT PRIMARY KEY,
    guild_id        BIGINT  NOT NULL,
    name            TEXT    NOT NULL,
    avatar_name     TEXT,
    avatar_type     TEXT,
    avatar          BYTEA,
    avatar_size     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX bot_post_as_guild ON bot_post_as (guild_id);

-- The webhook the bot made in a channel (a thread's parent, a forum), reused by every post
-- through it until it is deleted (then made again). `token` is a secret: never logged,
-- exported or shown. `persona`: what name and avatar it has now (a digest), so that it is
-- changed only when a post needs another one.
CREATE TABLE bot_webhooks (
    channel_id BIGINT PRIMARY KEY,
    guild_id   BIGINT  NOT NULL,
    webhook_id BIGINT  NOT NULL,
    token      TEXT    NOT NULL,
    persona    TEXT
);
CREATE INDEX bot_webhooks_guild ON bot_webhooks (guild_id);

-- An occurrence posted through a webhook has no nonce: its intent is written here, in the
-- transaction that begins its first attempt (`after_id`: a snowflake a little before it),
-- then before each execute the webhook, the thread it posts in (`where_id`; NULL: the
-- webhook's channel, or a new forum post) and `mark` (a digest of what that attempt sends). A re-run looks among that
-- place's messages by that webhook since `after_id` for one showing the mark that no
-- occurrence recorded, before it sends again. `message_id`: the post it made (its edits go
-- through the same webhook).
CREATE TABLE bot_webhook_posts (
    announcement_id BIGINT  NOT NULL,
    fire_ts         DOUBLE PRECISION NOT NULL,
    channel_id      BIGINT  NOT NULL,
    guild_id        BIGINT  NOT NULL,
    after_id        BIGINT  NOT NULL,
    webhook_id      BIGINT,
    where_id        BIGINT,
    mark            TEXT,
    message_id      BIGINT,
    PRIMARY KEY (announcement_id, fire_ts, channel_id)
);
CREATE INDEX bot_webhook_posts_guild ON bot_webhook_posts (guild_id);

-- A template keeps who the announcement it was saved from posts as (applied, the new one
-- posts as that too). NULL: as the bot.
ALTER TABLE bot_templates ADD COLUMN as_name TEXT;
ALTER TABLE bot_templates ADD COLUMN as_avatar_name TEXT;
ALTER TABLE bot_templates ADD COLUMN as_avatar_type TEXT;
ALTER TABLE bot_templates ADD COLUMN as_avatar BYTEA;
