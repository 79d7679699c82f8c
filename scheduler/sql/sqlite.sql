-- Named queries for the SQLite store. Parameters are positional (?N); lists are passed as
-- JSON arrays and read with json_each. Never build SQL with string formatting.

-- name: insert_job
INSERT INTO scheduler_jobs (
    fn, kind, state, next_ts, max_failures, initial_backoff, backoff_base, idempotent,
    parent_id, idempotency_key, on_complete, name, schedule_name, fire_ts, jitter,
    created_at, updated_at, finished_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?16, ?17)
ON CONFLICT DO NOTHING
RETURNING id;

-- name: insert_args
INSERT INTO scheduler_job_args (job_id, args, context_type, context, callback_of)
VALUES (?1, ?2, ?3, ?4, ?5);

-- name: insert_callback_args
INSERT INTO scheduler_job_args (job_id, args, context_type, context, callback_of)
SELECT ?1, ?2, context_type, context, ?3 FROM scheduler_job_args WHERE job_id = ?3;

-- name: job_by_key
SELECT id FROM scheduler_jobs WHERE idempotency_key = ?1;

-- name: job_state
SELECT state, on_complete FROM scheduler_jobs WHERE id = ?1;

-- name: claim_due
UPDATE scheduler_jobs
SET state = 'in_progress', run_count = run_count + 1, lease_expires_at = ?4, updated_at = ?5
WHERE id IN (
    SELECT id FROM scheduler_jobs
    WHERE state = 'pending' AND kind = ?1 AND next_ts <= ?2
    ORDER BY next_ts
    LIMIT ?3)
  AND state = 'pending'
RETURNING id, fn, kind, attempts, max_failures, initial_backoff, backoff_base, run_count,
          next_ts, on_complete, name, idempotent, schedule_name, fire_ts;

-- name: claimed_args
SELECT job_id, args, callback_of,
       CASE WHEN callback_of IS NULL THEN NULL ELSE context_type END,
       CASE WHEN callback_of IS NULL THEN NULL ELSE context END
FROM scheduler_job_args
WHERE job_id IN (SELECT value FROM json_each(?1));

-- name: next_due
SELECT next_ts FROM scheduler_jobs
WHERE state = 'pending' AND kind = ?1
ORDER BY next_ts
LIMIT 1;

-- name: finish_success
UPDATE scheduler_jobs
SET state = 'success', lease_expires_at = NULL, updated_at = ?3, finished_at = ?3
WHERE id = ?1 AND run_count = ?2 AND state = 'in_progress';

-- name: finish_retry
UPDATE scheduler_jobs
SET state = 'pending', attempts = attempts + 1, next_ts = ?3, lease_expires_at = NULL,
    updated_at = ?4
WHERE id = ?1 AND run_count = ?2 AND state = 'in_progress';

-- name: finish_failed
UPDATE scheduler_jobs
SET state = 'failed', attempts = attempts + 1, lease_expires_at = NULL, updated_at = ?3,
    finished_at = ?3
WHERE id = ?1 AND run_count = ?2 AND state = 'in_progress';

-- name: release
UPDATE scheduler_jobs
SET state = 'pending', lease_expires_at = NULL, updated_at = ?3
WHERE id = ?1 AND run_count = ?2 AND state = 'in_progress';

-- name: set_result
UPDATE scheduler_job_args SET result = ?2, error = NULL WHERE job_id = ?1;

-- name: set_error
UPDATE scheduler_job_args SET error = ?2 WHERE job_id = ?1;

-- name: extend_lease
UPDATE scheduler_jobs SET lease_expires_at = ?3
WHERE id = ?1 AND run_count = ?2 AND state = 'in_progress';

-- name: expired_leases
SELECT id, kind, idempotent, attempts, max_failures, run_count, on_complete, schedule_name
FROM scheduler_jobs
WHERE state = 'in_progress' AND lease_expires_at < ?1
ORDER BY lease_expires_at
LIMIT ?2;

-- name: reclaim_pending
UPDATE scheduler_jobs
SET state = 'pending', attempts = attempts + 1, next_ts = ?3, lease_expires_at = NULL,
    updated_at = ?3
WHERE id = ?1 AND run_count = ?2 AND state = 'in_progress';

-- name: cancel_pending
UPDATE scheduler_jobs SET state = 'canceled', updated_at = ?2, finished_at = ?2
WHERE id = ?1 AND state = 'pending';

-- name: children_of
SELECT id FROM scheduler_jobs WHERE parent_id IN (SELECT value FROM json_each(?1));

-- name: cancel_many
UPDATE scheduler_jobs SET state = 'canceled', updated_at = ?2, finished_at = ?2
WHERE id IN (SELECT value FROM json_each(?1)) AND state = 'pending'
RETURNING id, on_complete, schedule_name;

-- name: prune_ids
SELECT id FROM scheduler_jobs WHERE finished_at < ?1 ORDER BY finished_at LIMIT ?2;

-- name: delete_args
DELETE FROM scheduler_job_args WHERE job_id IN (SELECT value FROM json_each(?1));

-- name: delete_jobs
DELETE FROM scheduler_jobs WHERE id IN (SELECT value FROM json_each(?1));

-- name: get_job
SELECT j.id, j.fn, j.kind, j.state, j.next_ts, j.attempts, j.max_failures, j.run_count,
       j.lease_expires_at, j.parent_id, j.idempotency_key, j.on_complete, j.name,
       j.schedule_name, j.fire_ts, j.jitter, j.created_at, j.updated_at, j.finished_at,
       a.args, a.context_type, a.context, a.result, a.error, a.callback_of
FROM scheduler_jobs j LEFT JOIN scheduler_job_args a ON a.job_id = j.id
WHERE j.id = ?1;

-- name: list_jobs
SELECT j.id, j.fn, j.kind, j.state, j.next_ts, j.attempts, j.max_failures, j.run_count,
       j.lease_expires_at, j.parent_id, j.idempotency_key, j.on_complete, j.name,
       j.schedule_name, j.fire_ts, j.jitter, j.created_at, j.updated_at, j.finished_at,
       NULL, NULL, NULL, NULL, a.error, NULL
FROM scheduler_jobs j LEFT JOIN scheduler_job_args a ON a.job_id = j.id
WHERE (?1 IS NULL OR j.state = ?1) AND (?2 IS NULL OR j.fn = ?2)
  AND (?3 IS NULL OR j.id < ?3)
ORDER BY j.id DESC
LIMIT ?4;

-- name: retry_job
UPDATE scheduler_jobs
SET state = 'pending', attempts = 0, next_ts = ?2, lease_expires_at = NULL, finished_at = NULL,
    updated_at = ?2
WHERE id = ?1 AND state IN ('failed', 'canceled');

-- name: count_by_state
SELECT state, count(*) FROM scheduler_jobs GROUP BY state;

-- Schedules ---------------------------------------------------------------------------------

-- name: insert_schedule
INSERT INTO scheduler_schedules (
    name, source, trigger_spec, fn, kind, idempotent, max_failures, initial_backoff,
    backoff_base, args, overlap, catch_up, catchup_window, jitter, paused, next_fire_ts,
    last_fire_ts, fingerprint, created_at, updated_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?19)
ON CONFLICT DO NOTHING
RETURNING name;

-- name: update_schedule_definition
UPDATE scheduler_schedules
SET trigger_spec = ?2, fn = ?3, kind = ?4, idempotent = ?5, max_failures = ?6,
    initial_backoff = ?7, backoff_base = ?8, args = ?9, overlap = ?10, catch_up = ?11,
    catchup_window = ?12, jitter = ?13, next_fire_ts = ?14, fingerprint = ?15,
    last_error = NULL, updated_at = ?16
WHERE name = ?1;

-- name: get_schedule
SELECT name, source, trigger_spec, fn, kind, idempotent, max_failures, initial_backoff,
       backoff_base, args, overlap, catch_up, catchup_window, jitter, paused, next_fire_ts,
       last_fire_ts, skipped, missed, fingerprint, last_error, created_at, updated_at
FROM scheduler_schedules WHERE name = ?1;

-- name: list_schedules
SELECT name, source, trigger_spec, fn, kind, idempotent, max_failures, initial_backoff,
       backoff_base, args, overlap, catch_up, catchup_window, jitter, paused, next_fire_ts,
       last_fire_ts, skipped, missed, fingerprint, last_error, created_at, updated_at
FROM scheduler_schedules
WHERE (?1 IS NULL OR source = ?1)
ORDER BY name;

-- name: static_fingerprints
SELECT name, fingerprint, source FROM scheduler_schedules;

-- name: due_schedules
SELECT name, source, trigger_spec, fn, kind, idempotent, max_failures, initial_backoff,
       backoff_base, args, overlap, catch_up, catchup_window, jitter, paused, next_fire_ts,
       last_fire_ts, skipped, missed, fingerprint, last_error, created_at, updated_at
FROM scheduler_schedules
WHERE paused = 0 AND next_fire_ts IS NOT NULL AND next_fire_ts <= ?1
ORDER BY next_fire_ts
LIMIT ?2;

-- name: advance_schedule
UPDATE scheduler_schedules
SET next_fire_ts = ?3, last_fire_ts = ?4, skipped = skipped + ?5, missed = missed + ?6,
    last_error = ?7, updated_at = ?8
WHERE name = ?1 AND next_fire_ts = ?2;

-- name: next_schedule_fire
SELECT next_fire_ts FROM scheduler_schedules
WHERE paused = 0 AND next_fire_ts IS NOT NULL
ORDER BY next_fire_ts
LIMIT 1;

-- name: set_paused
UPDATE scheduler_schedules SET paused = ?2, next_fire_ts = ?3, updated_at = ?4
WHERE name = ?1;

-- name: delete_schedule
DELETE FROM scheduler_schedules WHERE name = ?1;

-- name: schedule_active_jobs
SELECT id, state, next_ts FROM scheduler_jobs
WHERE schedule_name = ?1 AND state IN ('pending', 'in_progress')
ORDER BY fire_ts, id;

-- name: release_held
UPDATE scheduler_jobs
SET next_ts = max(fire_ts + coalesce(jitter, 0), ?2), updated_at = ?2
WHERE id = (
    SELECT id FROM scheduler_jobs
    WHERE schedule_name = ?1 AND state = 'pending' AND next_ts = ?3
    ORDER BY fire_ts, id
    LIMIT 1);

-- name: count_unheld_active
SELECT count(*) FROM scheduler_jobs
WHERE schedule_name = ?1 AND state IN ('pending', 'in_progress') AND next_ts <> ?2;

-- name: schedule_pending_ids
SELECT id FROM scheduler_jobs WHERE schedule_name = ?1 AND state = 'pending';

-- name: insert_job_with_id
-- Batched plain enqueues: ids are allocated by the transaction that holds the write lock.
INSERT INTO scheduler_jobs (
    id, fn, kind, state, next_ts, max_failures, initial_backoff, backoff_base, idempotent,
    on_complete, name, schedule_name, fire_ts, jitter, created_at, updated_at)
VALUES (?1, ?2, ?3, 'pending', ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?14);

-- name: insert_schedules
-- Boot reconciliation's new static entries, in one executemany.
INSERT INTO scheduler_schedules (
    name, source, trigger_spec, fn, kind, idempotent, max_failures, initial_backoff,
    backoff_base, args, overlap, catch_up, catchup_window, jitter, paused, next_fire_ts,
    last_fire_ts, fingerprint, created_at, updated_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?19);
