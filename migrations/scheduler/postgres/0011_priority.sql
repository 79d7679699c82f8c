-- Priority: among due jobs a higher priority starts first (default 0; negative is lower).
-- Most jobs keep the default, so they keep an index of their own, in due order as before:
-- a store where nobody sets a priority claims exactly as it did. Jobs with another priority
-- are in a second index, by priority then due time, where a claim walks the priorities that
-- have due work (a skip scan over the few distinct values) and takes each one's due jobs in
-- due order: a flood of low-priority due work costs a high-priority job one batch at most,
-- and no claim scans the future backlog. Each pending unpaced job is in exactly one of them.
ALTER TABLE scheduler_jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;

DROP INDEX scheduler_jobs_due;
CREATE INDEX scheduler_jobs_due ON scheduler_jobs (kind, next_ts)
    WHERE state = 'pending' AND pace_key IS NULL AND priority = 0;
CREATE INDEX scheduler_jobs_ranked ON scheduler_jobs (kind, priority, next_ts)
    WHERE state = 'pending' AND pace_key IS NULL AND priority <> 0;
-- Paced jobs with a priority other than the default: whether there are any (then the claim
-- orders the keys' first jobs by priority, else by due time alone, as before).
CREATE INDEX scheduler_jobs_paced_ranked ON scheduler_jobs (kind)
    WHERE state = 'pending' AND pace_key IS NOT NULL AND priority <> 0;
