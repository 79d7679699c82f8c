-- Discord's scheduled events beside an announcement's posts (/schedule event: true).

-- What event each occurrence of an announcement gets: at `location` (EXTERNAL) or in the
-- voice or stage channel `channel_id`, lasting `minutes` from the occurrence's time.
CREATE TABLE bot_event_settings (
    announcement_id BIGINT PRIMARY KEY,
    guild_id        BIGINT  NOT NULL,
    location        TEXT,
    channel_id      BIGINT ,
    minutes         INTEGER NOT NULL
);

-- One Discord event per occurrence. Creating one has no nonce, so the intent is written
-- first (state 'creating', with the name and start it is created with: what a re-run
-- looks for among the server's events before it creates again), the event's id once
-- Discord answered ('created'); 'canceled' once it was canceled (skip, cancel, pause),
-- 'failed' when Discord refused it for good (`error` says why).
CREATE TABLE bot_events (
    announcement_id BIGINT  NOT NULL,
    fire_ts         DOUBLE PRECISION NOT NULL,
    guild_id        BIGINT  NOT NULL,
    state           TEXT    NOT NULL,
    event_id        BIGINT ,
    name            TEXT    NOT NULL,
    start_ts        DOUBLE PRECISION NOT NULL,
    shows           TEXT    NOT NULL,   -- what the event was last made or edited to show
    error           TEXT,
    updated_at      DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (announcement_id, fire_ts)
);
CREATE INDEX bot_events_guild ON bot_events (guild_id, state);

-- The job working on an announcement's events (one at a time), and until when its claim
-- holds if its run dies.
CREATE TABLE bot_event_claims (
    announcement_id BIGINT PRIMARY KEY,
    job_id          BIGINT NOT NULL,
    until_ts        DOUBLE PRECISION NOT NULL
);
