-- An announcement posted in several places (/edit also_in:, templates, the dashboard): each
-- occurrence is posted once in its channel and once in each other place, each place with a
-- delivery record of its own.

-- The other places an announcement posts each occurrence in, in the order given: a text or
-- announcement channel, or a thread ('text', 'announcement' or 'thread', checked in code).
CREATE TABLE bot_announcement_places (
    announcement_id BIGINT  NOT NULL,
    channel_id      BIGINT  NOT NULL,
    guild_id        BIGINT  NOT NULL,
    position        INTEGER NOT NULL,
    destination     TEXT    NOT NULL,
    PRIMARY KEY (announcement_id, channel_id)
);
CREATE INDEX bot_announcement_places_guild ON bot_announcement_places (guild_id);

-- A template's other places (/template save keeps them; /schedule template: re-checks them).
CREATE TABLE bot_template_places (
    template_id BIGINT  NOT NULL,
    channel_id  BIGINT  NOT NULL,
    guild_id    BIGINT  NOT NULL,
    position    INTEGER NOT NULL,
    PRIMARY KEY (template_id, channel_id)
);
CREATE INDEX bot_template_places_guild ON bot_template_places (guild_id);

-- One row per (occurrence, other place): written 'queued' with the place's job in the
-- transaction that begins the occurrence in its own channel, 'sending' (with its nonce) right
-- before each send, then 'sent' with the message's id, 'failed' with why, or 'skipped' (the
-- announcement canceled, the bot out of the server). A re-run finds it and posts nothing
-- more; the message's revision and why it could not be updated, as for bot_deliveries.
CREATE TABLE bot_place_deliveries (
    announcement_id  BIGINT  NOT NULL,
    fire_ts          DOUBLE PRECISION NOT NULL,
    channel_id       BIGINT  NOT NULL,
    guild_id         BIGINT  NOT NULL,
    state            TEXT    NOT NULL,
    nonce            TEXT    NOT NULL,
    job_id           BIGINT,
    first_attempt_at DOUBLE PRECISION,
    attempts         INTEGER NOT NULL DEFAULT 0,
    message_id       BIGINT,
    sent_at          DOUBLE PRECISION,
    late_by          DOUBLE PRECISION,
    error            TEXT,
    revision         INTEGER,
    update_error     TEXT,
    PRIMARY KEY (announcement_id, fire_ts, channel_id)
);
CREATE INDEX bot_place_deliveries_guild ON bot_place_deliveries (guild_id);
