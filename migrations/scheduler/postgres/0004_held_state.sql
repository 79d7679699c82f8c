-- A schedule occurrence waiting for the previous one to end (overlap buffer_one, a fire_all
-- backlog) has its own state, 'held', instead of being 'pending' with next_ts at the
-- sentinel 253402300799 (9999-12-31T23:59:59Z). A held row's next_ts is the time it would
-- have run: its fire time plus its jitter.
ALTER TABLE scheduler_jobs DROP CONSTRAINT scheduler_jobs_state_check;
ALTER TABLE scheduler_jobs ADD CONSTRAINT scheduler_jobs_state_check
    CHECK (state IN ('pending', 'held', 'in_progress', 'success', 'failed', 'canceled'));

UPDATE scheduler_jobs
SET state = 'held', next_ts = fire_ts + coalesce(jitter, 0)
WHERE state = 'pending' AND next_ts = 253402300799 AND schedule_name IS NOT NULL
  AND fire_ts IS NOT NULL;
