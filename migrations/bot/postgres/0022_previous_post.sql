-- The previous post (/edit pin: replace: delete_after:): what becomes of an announcement's
-- posts once they are up. A row only for an announcement that set one of them.
CREATE TABLE bot_post_settings (
    announcement_id  BIGINT PRIMARY KEY,
    guild_id         BIGINT  NOT NULL,
    pin              INTEGER NOT NULL DEFAULT 0,   -- pin each post, unpin the one before
    replace_previous INTEGER NOT NULL DEFAULT 0,   -- delete the post before once the new is up
    delete_after_s   DOUBLE PRECISION              -- delete each post this long after it
);
CREATE INDEX bot_post_settings_guild ON bot_post_settings (guild_id);

-- Each post of an announcement (an occurrence's, or an extra one of /postnow), recorded in
-- the transaction that records it up, with what is still to be done to it: the intent of
-- each step is written before its request ('pin' then 'pinned'; 'unpin' then 'unpinned';
-- remove_state 'delete', or delete_at reached, then 'deleted'), by one job at a time per
-- announcement (bot_post_claims). 'gone': a moderator deleted it first; 'failed': Discord
-- refused the step for good (error says why). Settled rows but the latest are pruned.
CREATE TABLE bot_posts (
    announcement_id BIGINT  NOT NULL,
    message_id      BIGINT  NOT NULL,
    guild_id        BIGINT  NOT NULL,
    channel_id      BIGINT  NOT NULL,
    posted_at       DOUBLE PRECISION NOT NULL,
    pin_state       TEXT,
    remove_state    TEXT,
    delete_at       DOUBLE PRECISION,
    error           TEXT,
    PRIMARY KEY (announcement_id, message_id)
);
CREATE INDEX bot_posts_guild ON bot_posts (guild_id);

-- The job (and its run: the attempt) that works on an announcement's posts now: one at a
-- time, so that no pin of one run can land after another run's unpin of the same post.
CREATE TABLE bot_post_claims (
    announcement_id BIGINT PRIMARY KEY,
    guild_id        BIGINT  NOT NULL,
    job_id          BIGINT  NOT NULL,
    attempt         BIGINT  NOT NULL,
    until_ts        DOUBLE PRECISION NOT NULL
);
CREATE INDEX bot_post_claims_guild ON bot_post_claims (guild_id);

-- A template keeps them too (/template save, /schedule template:, the dashboard).
ALTER TABLE bot_templates ADD COLUMN post_pin INTEGER NOT NULL DEFAULT 0;
ALTER TABLE bot_templates ADD COLUMN post_replace INTEGER NOT NULL DEFAULT 0;
ALTER TABLE bot_templates ADD COLUMN post_delete_after_s DOUBLE PRECISION;
