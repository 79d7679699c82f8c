-- Jobs: the small hot row the driver scans, and the payloads it never scans.
CREATE TABLE scheduler_jobs (
    id               INTEGER PRIMARY KEY,
    fn               TEXT    NOT NULL,
    kind             TEXT    NOT NULL CHECK (kind IN ('mutation', 'action')),
    state            TEXT    NOT NULL
                     CHECK (state IN ('pending', 'in_progress', 'success', 'failed', 'canceled')),
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

-- Due work in next_ts order, per kind (so a full action pool never hides due mutations).
CREATE INDEX scheduler_jobs_due ON scheduler_jobs (kind, next_ts) WHERE state = 'pending';
-- The lease sweep.
CREATE INDEX scheduler_jobs_lease ON scheduler_jobs (lease_expires_at) WHERE state = 'in_progress';
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

CREATE TABLE scheduler_job_args (
    job_id       INTEGER PRIMARY KEY,
    args         TEXT NOT NULL,
    context_type TEXT CHECK (context_type IN ('json', 'bytes')),
    context      BLOB,
    callback_of  INTEGER,
    result       TEXT,
    error        TEXT
);
