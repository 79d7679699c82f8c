-- Per-key concurrency: at most conc_limit jobs that share a conc_key are in progress at once,
-- in every process that shares the database. A job waiting for its turn is plain pending:
-- the claim skips it while its key is at its limit (so it holds no lease and no worker
-- slot), and the key's next job, in due order, becomes claimable when one ends. A job
-- (and, through its function's registration, a schedule's occurrence) carries the key and
-- the limit; NULL: no limit. A job takes a pace or a concurrency, never both.
ALTER TABLE scheduler_jobs ADD COLUMN conc_key TEXT;
ALTER TABLE scheduler_jobs ADD COLUMN conc_limit INTEGER;

-- The plain due indexes leave limited jobs out, as they leave paced ones: a key at its limit
-- with a long queue behind it costs the claim of other work nothing, and a store where
-- nobody sets a limit claims exactly as before.
DROP INDEX scheduler_jobs_due;
CREATE INDEX scheduler_jobs_due ON scheduler_jobs (kind, next_ts)
    WHERE state = 'pending' AND pace_key IS NULL AND conc_key IS NULL AND priority = 0;
DROP INDEX scheduler_jobs_ranked;
CREATE INDEX scheduler_jobs_ranked ON scheduler_jobs (kind, priority, next_ts)
    WHERE state = 'pending' AND pace_key IS NULL AND conc_key IS NULL AND priority <> 0;
-- Pending limited jobs in due order: the claim reads the due ones (not the future ones).
CREATE INDEX scheduler_jobs_limited_due ON scheduler_jobs (next_ts, id)
    WHERE state = 'pending' AND conc_key IS NOT NULL;
-- Each key's pending limited jobs in due order (whose turn it is).
CREATE INDEX scheduler_jobs_limited ON scheduler_jobs (conc_key, next_ts, id)
    WHERE state = 'pending' AND conc_key IS NOT NULL;
-- Each key's running jobs (how many places are taken).
CREATE INDEX scheduler_jobs_limited_running ON scheduler_jobs (conc_key)
    WHERE state = 'in_progress' AND conc_key IS NOT NULL;
