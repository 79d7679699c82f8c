-- Recurring schedules: static crons (reconciled from code at boot) and runtime schedules.
-- Each occurrence is a job with idempotency_key '<name>:<fire_ts>', so a time runs once.
CREATE TABLE scheduler_schedules (
    name            TEXT    PRIMARY KEY,
    source          TEXT    NOT NULL CHECK (source IN ('static', 'runtime')),
    trigger_spec    TEXT    NOT NULL,   -- JSON, see scheduler.triggers.trigger_from_spec
    fn              TEXT    NOT NULL,
    kind            TEXT    NOT NULL CHECK (kind IN ('mutation', 'action')),
    idempotent      INTEGER NOT NULL DEFAULT 0,
    max_failures    INTEGER NOT NULL,
    initial_backoff DOUBLE PRECISION NOT NULL,
    backoff_base    DOUBLE PRECISION NOT NULL,
    args            TEXT    NOT NULL,   -- JSON
    overlap         TEXT    NOT NULL
                    CHECK (overlap IN ('skip', 'buffer_one', 'allow_all', 'cancel_other')),
    catch_up        TEXT    NOT NULL CHECK (catch_up IN ('skip', 'fire_once', 'fire_all')),
    catchup_window  DOUBLE PRECISION NOT NULL,   -- seconds
    jitter          DOUBLE PRECISION NOT NULL,   -- seconds: each occurrence is offset by [0, jitter)
    paused          INTEGER NOT NULL DEFAULT 0,
    next_fire_ts    DOUBLE PRECISION,   -- the next nominal fire time not yet materialized
    last_fire_ts    DOUBLE PRECISION,   -- the latest nominal fire time reached (the anchor)
    skipped         INTEGER NOT NULL DEFAULT 0,  -- times skipped by the overlap policy
    missed          INTEGER NOT NULL DEFAULT 0,  -- times dropped by the catch-up policy
    fingerprint     TEXT    NOT NULL,   -- static entries: what reconciliation compares
    last_error      TEXT,
    created_at      DOUBLE PRECISION NOT NULL,
    updated_at      DOUBLE PRECISION NOT NULL
);

CREATE INDEX scheduler_schedules_due ON scheduler_schedules (next_fire_ts)
    WHERE paused = 0 AND next_fire_ts IS NOT NULL;
