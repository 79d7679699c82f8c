-- Pacing at scale: finding the next paced start, and the paced jobs to claim, without a
-- probe per pace key (a store with tens of thousands of keys paid one per key on every
-- dispatch pass).
-- Pending paced jobs in due order, per kind: walked from the earliest to the first that is
-- its key's first job.
CREATE INDEX scheduler_jobs_paced_due ON scheduler_jobs (kind, next_ts, id)
    WHERE state = 'pending' AND pace_key IS NOT NULL;
-- The slots still ahead: the only keys whose start is not their first job's due time.
CREATE INDEX scheduler_pace_ahead ON scheduler_pace (next_start_ts);
