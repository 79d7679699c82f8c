-- Pacing: jobs that share a pace key start at least their spacing apart, in due order, in
-- every process that shares the database. A job (and a schedule, for its occurrences)
-- carries the key and the spacing; scheduler_pace holds each key's next open slot, taken
-- and pushed on by the claim that starts one of its jobs. No row, or a slot in the past,
-- means the key's next job may start at once.
ALTER TABLE scheduler_jobs ADD COLUMN pace_key TEXT;
ALTER TABLE scheduler_jobs ADD COLUMN pace_spacing REAL;
ALTER TABLE scheduler_schedules ADD COLUMN pace_key TEXT;
ALTER TABLE scheduler_schedules ADD COLUMN pace_spacing REAL;

CREATE TABLE scheduler_pace (
    pace_key      TEXT PRIMARY KEY,
    next_start_ts REAL NOT NULL
);

-- Due unpaced work in next_ts order, per kind: paced jobs waiting for their slot are not in
-- it, so a long queue behind one key costs the claim of other work nothing.
DROP INDEX scheduler_jobs_due;
CREATE INDEX scheduler_jobs_due ON scheduler_jobs (kind, next_ts)
    WHERE state = 'pending' AND pace_key IS NULL;
-- Each pace key's pending jobs in due order: the keys (a skip scan) and each key's first.
CREATE INDEX scheduler_jobs_paced ON scheduler_jobs (pace_key, next_ts, id)
    WHERE state = 'pending' AND pace_key IS NOT NULL;
