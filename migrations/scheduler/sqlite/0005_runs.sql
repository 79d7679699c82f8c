-- Run history: one row per attempt, written in the transaction that records how it ended
-- (a completion, or the lease sweep's reclaim), kept for the scheduler's run retention.
-- Rows outlive their jobs: a pruned one-off job still shows when it ran and how.
CREATE TABLE scheduler_runs (
    id          INTEGER PRIMARY KEY,
    job_id      INTEGER NOT NULL,
    fn          TEXT    NOT NULL,
    attempt     INTEGER NOT NULL,   -- failed attempts before this run (0 on the first)
    run_count   INTEGER NOT NULL,   -- the job's claim this run held (the lease fence)
    due_ts      REAL    NOT NULL,   -- when the job was due
    started_at  REAL,               -- when the run began (its claim)
    finished_at REAL    NOT NULL,   -- when its outcome was recorded
    outcome     TEXT    NOT NULL
                CHECK (outcome IN ('success', 'retry', 'failed', 'released', 'discarded',
                                   'lease_lost')),
    error       TEXT,
    process     TEXT                -- the process that ran it (None: not known)
);

-- Retention pruning, and "since" reads.
CREATE INDEX scheduler_runs_finished ON scheduler_runs (finished_at);
-- One job's history.
CREATE INDEX scheduler_runs_job ON scheduler_runs (job_id);
