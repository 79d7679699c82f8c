-- A schedule occurrence waiting for the previous one to end (overlap buffer_one, a fire_all
-- backlog) has its own state, 'held', instead of being 'pending' with next_ts at the
-- sentinel 253402300799 (9999-12-31T23:59:59Z). A held row's next_ts is the time it would
-- have run: its fire time plus its jitter. SQLite cannot change a CHECK constraint in
-- place, so the table is rebuilt with the new one (ids and every column kept) and its
-- indexes are made again, as 0001 and 0003 left them.
CREATE TABLE scheduler_jobs_rebuilt (
    id               INTEGER PRIMARY KEY,
    fn               TEXT    NOT NULL,
    kind             TEXT    NOT NULL CHECK (kind IN ('mutation', 'action')),
    state            TEXT    NOT NULL
                     CHECK (state IN ('pending', 'held', 'in_progress', 'success', 'failed',
                                      'canceled')),
    next_ts          REAL    NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    max_failures     INTEGER NOT NULL CHECK (max_failures >= 1),
    initial_backoff  REAL    NOT NULL,
    backoff_base     REAL    NOT NULL,
    idempotent       INTEGER NOT NULL DEFAULT 0,
    run_count        INTEGER NOT NULL DEFAULT 0,
    lease_expires_at REAL,
    parent_id        INTEGER,
    idempotency_key  TEXT,
    on_complete      TEXT,
    name             TEXT,
    schedule_name    TEXT,
    fire_ts          REAL,
    jitter           REAL,
    created_at       REAL    NOT NULL,
    updated_at       REAL    NOT NULL,
    finished_at      REAL
);

INSERT INTO scheduler_jobs_rebuilt (
    id, fn, kind, state, next_ts, attempts, max_failures, initial_backoff, backoff_base,
    idempotent, run_count, lease_expires_at, parent_id, idempotency_key, on_complete, name,
    schedule_name, fire_ts, jitter, created_at, updated_at, finished_at)
SELECT id, fn, kind, state, next_ts, attempts, max_failures, initial_backoff, backoff_base,
       idempotent, run_count, lease_expires_at, parent_id, idempotency_key, on_complete, name,
       schedule_name, fire_ts, jitter, created_at, updated_at, finished_at
FROM scheduler_jobs;

UPDATE scheduler_jobs_rebuilt
SET state = 'held', next_ts = fire_ts + coalesce(jitter, 0)
WHERE state = 'pending' AND next_ts = 253402300799.0 AND schedule_name IS NOT NULL
  AND fire_ts IS NOT NULL;

DROP TABLE scheduler_jobs;
ALTER TABLE scheduler_jobs_rebuilt RENAME TO scheduler_jobs;

-- Due work in next_ts order, per kind (so a full action pool never hides due mutations).
CREATE INDEX scheduler_jobs_due ON scheduler_jobs (kind, next_ts) WHERE state = 'pending';
-- The lease sweep (see 0003).
CREATE INDEX scheduler_jobs_lease ON scheduler_jobs (lease_expires_at)
    WHERE state = 'in_progress' AND lease_expires_at IS NOT NULL;
-- The cancel cascade.
CREATE INDEX scheduler_jobs_parent ON scheduler_jobs (parent_id) WHERE parent_id IS NOT NULL;
-- One live job per idempotency key (schedule occurrences use "<name>:<fire_ts>").
CREATE UNIQUE INDEX scheduler_jobs_idempotency ON scheduler_jobs (idempotency_key)
    WHERE idempotency_key IS NOT NULL;
-- Retention pruning of terminal jobs.
CREATE INDEX scheduler_jobs_finished ON scheduler_jobs (finished_at) WHERE finished_at IS NOT NULL;
-- A schedule's occurrences (overlap checks, listing).
CREATE INDEX scheduler_jobs_schedule ON scheduler_jobs (schedule_name, fire_ts)
    WHERE schedule_name IS NOT NULL;
