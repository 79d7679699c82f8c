-- One job at a time makes an announcement's Discord events through the scheduler's per-key
-- concurrency (key events:<announcement id>, limit 1): the next one waits without a lease,
-- a worker slot or an attempt spent, and starts when the running one ends. The claims table
-- that did it by hand goes; the events jobs not finished yet carry the key from now on.
UPDATE scheduler_jobs
SET conc_key = 'events:' || (SELECT json_extract(a.args, '$.announcement_id')
                             FROM scheduler_job_args a WHERE a.job_id = scheduler_jobs.id),
    conc_limit = 1
WHERE fn = 'announcements:events' AND state IN ('pending', 'held', 'in_progress')
  AND conc_key IS NULL;

DROP TABLE bot_event_claims;
