-- Timeouts: a run still going after its job's timeout is cancelled and counts as a failed
-- attempt. The job's own timeout in seconds, given at enqueue; NULL: its registration's, if
-- the registration has one when the job runs, else none.
ALTER TABLE scheduler_jobs ADD COLUMN run_timeout DOUBLE PRECISION;
