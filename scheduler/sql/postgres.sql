-- Named queries for the PostgreSQL store: the same names, descriptions, parameters and
-- result columns as sqlite.sql. Parameters are named (:job_id) and numbered ($n) when the
-- file is loaded; lists are bigint arrays read with = ANY(...). A parameter that may be
-- NULL and is only compared carries an explicit type (:state::text). Never build SQL with
-- string formatting.

-- name: insert_job
-- A new job; nothing (no row) when its idempotency key is already taken.
INSERT INTO scheduler_jobs (
    fn, kind, state, next_ts, max_failures, initial_backoff, backoff_base, idempotent,
    parent_id, idempotency_key, on_complete, name, schedule_name, fire_ts, jitter,
    pace_key, pace_spacing, priority, run_timeout, conc_key, conc_limit, created_at,
    updated_at, finished_at)
VALUES (:fn, :kind, :state, :next_ts, :max_failures, :initial_backoff, :backoff_base,
        :idempotent, :parent_id, :idempotency_key, :on_complete, :name, :schedule_name,
        :fire_ts, :jitter, :pace_key, :pace_spacing, :priority, :run_timeout, :conc_key,
        :conc_limit, :now, :now, :finished_at)
ON CONFLICT DO NOTHING
RETURNING id;

-- name: insert_keyed_job
-- A new debounce's or batch's job, open to the calls with its key; nothing (no row) when another transaction opened that key's first.
INSERT INTO scheduler_jobs (
    fn, kind, state, next_ts, max_failures, initial_backoff, backoff_base, idempotent,
    parent_id, idempotency_key, on_complete, name, schedule_name, fire_ts, jitter,
    pace_key, pace_spacing, priority, run_timeout, conc_key, conc_limit, created_at,
    updated_at, finished_at, debounce_key, batch_key, batch_items)
VALUES (:fn, :kind, :state, :next_ts, :max_failures, :initial_backoff, :backoff_base,
        :idempotent, :parent_id, :idempotency_key, :on_complete, :name, :schedule_name,
        :fire_ts, :jitter, :pace_key, :pace_spacing, :priority, :run_timeout, :conc_key,
        :conc_limit, :now, :now, :finished_at, :debounce_key, :batch_key, :batch_items)
ON CONFLICT DO NOTHING
RETURNING id;

-- name: insert_args
-- A job's payload row: its arguments and context (and, for a callback, whose it is).
INSERT INTO scheduler_job_args (job_id, args, context_type, context, callback_of)
VALUES (:job_id, :args, :context_type, :context, :callback_of);

-- name: insert_callback_args
-- An on_complete callback's payload, copying the context of the job it reports on.
INSERT INTO scheduler_job_args (job_id, args, context_type, context, callback_of)
SELECT :job_id::bigint, :args::text, context_type, context, :callback_of::bigint
FROM scheduler_job_args WHERE job_id = :callback_of::bigint;

-- name: job_by_key
-- The job holding an idempotency key, if any.
SELECT id FROM scheduler_jobs WHERE idempotency_key = :idempotency_key;

-- name: job_state
-- A job's state and on_complete callback.
SELECT state, on_complete FROM scheduler_jobs WHERE id = :job_id;

-- name: claim_due
-- Take up to :limit due unpaced pending jobs of one kind and the default priority (0), in due order, leased until :lease_until by :process.
-- SKIP LOCKED in a CTE so the LIMIT counts rows this transaction could lock: concurrent
-- claimers take disjoint batches instead of queueing behind each other's row locks.
WITH due AS (
    SELECT id FROM scheduler_jobs
    WHERE state = 'pending' AND pace_key IS NULL AND conc_key IS NULL AND priority = 0 AND kind = :kind
      AND next_ts <= :now
    ORDER BY next_ts
    LIMIT :limit
    FOR UPDATE SKIP LOCKED)
UPDATE scheduler_jobs AS j
SET state = 'in_progress', run_count = j.run_count + 1, lease_expires_at = :lease_until,
    updated_at = :now, lease_holder = :process::text
FROM due
WHERE j.id = due.id AND j.state = 'pending'
RETURNING j.id, j.fn, j.kind, j.attempts, j.max_failures, j.initial_backoff, j.backoff_base,
          j.run_count, j.next_ts, j.on_complete, j.name, j.idempotent, j.schedule_name,
          j.fire_ts, j.priority, j.run_timeout, j.conc_key;

-- name: claim_ranked
-- Take up to :limit due unpaced pending jobs of one kind and of priority :priority (not 0), in due order, leased until :lease_until by :process.
WITH due AS (
    SELECT id FROM scheduler_jobs
    WHERE state = 'pending' AND pace_key IS NULL AND conc_key IS NULL AND priority <> 0 AND kind = :kind
      AND priority = :priority AND next_ts <= :now
    ORDER BY next_ts
    LIMIT :limit
    FOR UPDATE SKIP LOCKED)
UPDATE scheduler_jobs AS j
SET state = 'in_progress', run_count = j.run_count + 1, lease_expires_at = :lease_until,
    updated_at = :now, lease_holder = :process::text
FROM due
WHERE j.id = due.id AND j.state = 'pending'
RETURNING j.id, j.fn, j.kind, j.attempts, j.max_failures, j.initial_backoff, j.backoff_base,
          j.run_count, j.next_ts, j.on_complete, j.name, j.idempotent, j.schedule_name,
          j.fire_ts, j.priority, j.run_timeout, j.conc_key;

-- name: ranked_levels
-- The priorities (not 0) of the unpaced pending jobs of one kind, highest first, each with its earliest next_ts.
-- A skip scan of scheduler_jobs_ranked: one probe per distinct priority, whatever the backlog.
WITH RECURSIVE levels(p) AS (
    SELECT (SELECT priority FROM scheduler_jobs
            WHERE state = 'pending' AND pace_key IS NULL AND conc_key IS NULL AND priority <> 0 AND kind = :kind
            ORDER BY priority DESC LIMIT 1)
    UNION ALL
    SELECT (SELECT priority FROM scheduler_jobs
            WHERE state = 'pending' AND pace_key IS NULL AND conc_key IS NULL AND priority <> 0 AND kind = :kind
              AND priority < levels.p
            ORDER BY priority DESC LIMIT 1)
    FROM levels WHERE levels.p IS NOT NULL)
SELECT p AS priority,
       (SELECT next_ts FROM scheduler_jobs
        WHERE state = 'pending' AND pace_key IS NULL AND conc_key IS NULL AND priority <> 0 AND kind = :kind
          AND priority = levels.p
        ORDER BY next_ts LIMIT 1) AS first_ts
FROM levels WHERE p IS NOT NULL
ORDER BY p DESC;

-- name: claimed_args
-- The payloads of claimed jobs; a callback's also carry the context it reports on, a batch's its mark.
SELECT job_id, args, callback_of, batch,
       CASE WHEN callback_of IS NULL THEN NULL ELSE context_type END AS context_type,
       CASE WHEN callback_of IS NULL THEN NULL ELSE context END AS context
FROM scheduler_job_args
WHERE job_id = ANY(:job_ids::bigint[]);

-- name: next_due
-- The earliest next_ts of an unpaced pending job of one kind and the default priority (0).
SELECT next_ts FROM scheduler_jobs
WHERE state = 'pending' AND pace_key IS NULL AND conc_key IS NULL AND priority = 0 AND kind = :kind
ORDER BY next_ts
LIMIT 1;

-- name: finish_successes
-- Runs that succeeded (:job_ids with their :run_counts): their jobs are done, fenced as every finish; the ids of those still held.
-- The id = ANY(...) finds the rows by primary key, whatever the statistics say of the join.
UPDATE scheduler_jobs AS j
SET state = 'success', lease_expires_at = NULL, updated_at = :now, finished_at = :now
FROM unnest(:job_ids::bigint[], :run_counts::integer[]) AS r(id, run_count)
WHERE j.id = ANY(:job_ids::bigint[]) AND j.id = r.id AND j.run_count = r.run_count
  AND j.state = 'in_progress'
RETURNING j.id;

-- name: finish_retry
-- A run failed with budget left: pending again at :next_ts, the attempt counted.
UPDATE scheduler_jobs
SET state = 'pending', attempts = attempts + 1, next_ts = :next_ts, lease_expires_at = NULL,
    updated_at = :now
WHERE id = :job_id AND run_count = :run_count AND state = 'in_progress';

-- name: finish_failed
-- A run failed for good: the job is failed, the attempt counted.
UPDATE scheduler_jobs
SET state = 'failed', attempts = attempts + 1, lease_expires_at = NULL, updated_at = :now,
    finished_at = :now
WHERE id = :job_id AND run_count = :run_count AND state = 'in_progress';

-- name: release
-- A run stopped before it could have had an effect: pending again, no attempt counted.
UPDATE scheduler_jobs
SET state = 'pending', lease_expires_at = NULL, updated_at = :now
WHERE id = :job_id AND run_count = :run_count AND state = 'in_progress';

-- name: set_results
-- Record the :results of jobs :job_ids (JSON or null each), clearing earlier attempts' errors.
-- A row that already says so is not rewritten (a null result with no error: most jobs).
UPDATE scheduler_job_args AS a SET result = r.result, error = NULL
FROM unnest(:job_ids::bigint[], :results::text[]) AS r(job_id, result)
WHERE a.job_id = ANY(:job_ids::bigint[]) AND a.job_id = r.job_id
  AND (a.result IS DISTINCT FROM r.result OR a.error IS NOT NULL);

-- name: set_error
-- Record the error of a job's latest failed attempt.
UPDATE scheduler_job_args SET error = :error WHERE job_id = :job_id;

-- name: extend_lease
-- Move a running job's lease to :lease_until, if this run still holds it.
UPDATE scheduler_jobs SET lease_expires_at = :lease_until
WHERE id = :job_id AND run_count = :run_count AND state = 'in_progress';

-- name: expired_leases
-- Up to :limit running jobs whose lease ran out before :now, oldest lease first, with the process holding each.
SELECT id, kind, idempotent, attempts, max_failures, run_count, on_complete, schedule_name,
       lease_holder, conc_key
FROM scheduler_jobs
WHERE state = 'in_progress' AND lease_expires_at < :now
ORDER BY lease_expires_at
LIMIT :limit;

-- name: reclaim_pending
-- A job whose lease expired runs again now, the lost attempt counted.
UPDATE scheduler_jobs
SET state = 'pending', attempts = attempts + 1, next_ts = :now, lease_expires_at = NULL,
    updated_at = :now
WHERE id = :job_id AND run_count = :run_count AND state = 'in_progress';

-- name: children_of
-- The jobs whose parent is one of :job_ids (one level of the cancel cascade).
SELECT id FROM scheduler_jobs WHERE parent_id = ANY(:job_ids::bigint[]);

-- name: cancel_many
-- Cancel those of :job_ids still pending or held; returns what their ending must trigger.
UPDATE scheduler_jobs SET state = 'canceled', updated_at = :now, finished_at = :now
WHERE id = ANY(:job_ids::bigint[]) AND state IN ('pending', 'held')
RETURNING id, on_complete, schedule_name;

-- name: prune_ids
-- Up to :limit jobs that finished before :before, oldest first (retention).
SELECT id FROM scheduler_jobs WHERE finished_at < :before ORDER BY finished_at LIMIT :limit;

-- name: delete_args
-- Delete the payload rows of :job_ids.
DELETE FROM scheduler_job_args WHERE job_id = ANY(:job_ids::bigint[]);

-- name: delete_jobs
-- Delete the job rows of :job_ids.
DELETE FROM scheduler_jobs WHERE id = ANY(:job_ids::bigint[]);

-- name: get_job
-- One job with its payload.
SELECT j.id, j.fn, j.kind, j.state, j.next_ts, j.attempts, j.max_failures, j.run_count,
       j.lease_expires_at, j.parent_id, j.idempotency_key, j.on_complete, j.name,
       j.schedule_name, j.fire_ts, j.jitter, j.created_at, j.updated_at, j.finished_at,
       j.pace_key, j.pace_spacing, j.priority, j.run_timeout, j.conc_key, j.conc_limit,
       a.args, a.context_type, a.context, a.result, a.error, a.callback_of, a.batch
FROM scheduler_jobs j LEFT JOIN scheduler_job_args a ON a.job_id = j.id
WHERE j.id = :job_id;

-- name: job_outcomes
-- The state of each of :job_ids that exists, with its result and error (what awaiting its result reads).
SELECT j.id, j.state, a.result, a.error
FROM scheduler_jobs j LEFT JOIN scheduler_job_args a ON a.job_id = j.id
WHERE j.id = ANY(:job_ids::bigint[]);

-- name: list_jobs
-- A page of jobs, newest first, optionally of one state or function (of the payload, the error).
SELECT j.id, j.fn, j.kind, j.state, j.next_ts, j.attempts, j.max_failures, j.run_count,
       j.lease_expires_at, j.parent_id, j.idempotency_key, j.on_complete, j.name,
       j.schedule_name, j.fire_ts, j.jitter, j.created_at, j.updated_at, j.finished_at,
       j.pace_key, j.pace_spacing, j.priority, j.run_timeout, j.conc_key, j.conc_limit,
       NULL AS args, NULL AS context_type, NULL AS context, NULL AS result, a.error,
       NULL AS callback_of
FROM scheduler_jobs j LEFT JOIN scheduler_job_args a ON a.job_id = j.id
WHERE (:state::text IS NULL OR j.state = :state::text) AND (:fn::text IS NULL OR j.fn = :fn::text)
  AND (:before_id::bigint IS NULL OR j.id < :before_id::bigint)
ORDER BY j.id DESC
LIMIT :limit;

-- name: retry_job
-- A failed or canceled job runs again now, with a fresh retry budget (as it was: a debounce or a batch it was open to is closed).
UPDATE scheduler_jobs
SET state = 'pending', attempts = 0, next_ts = :now, lease_expires_at = NULL,
    finished_at = NULL, updated_at = :now, debounce_key = NULL, batch_key = NULL
WHERE id = :job_id AND state IN ('failed', 'canceled');

-- name: count_by_state
-- How many jobs are in each state.
SELECT state, count(*) AS n FROM scheduler_jobs GROUP BY state;

-- Debounce and batch -------------------------------------------------------------------------

-- name: open_debounce
-- The open debounce of a function and key (pending, never started), with its due time and first call.
SELECT id, next_ts, created_at FROM scheduler_jobs
WHERE fn = :fn AND debounce_key = :debounce_key AND state = 'pending' AND run_count = 0;

-- name: push_debounce
-- Move an open debounce to :next_ts (nothing when it started meanwhile).
UPDATE scheduler_jobs SET next_ts = :next_ts, updated_at = :now
WHERE id = :job_id AND state = 'pending' AND run_count = 0 AND debounce_key IS NOT NULL;

-- name: set_args
-- Replace a job's arguments (a debounce takes its latest call's).
UPDATE scheduler_job_args SET args = :args WHERE job_id = :job_id;

-- name: open_batch
-- The open batch of a function and key (pending, never started, not full), with its due time.
SELECT id, next_ts FROM scheduler_jobs
WHERE fn = :fn AND batch_key = :batch_key AND state = 'pending' AND run_count = 0;

-- name: add_to_batch
-- Count one more item into an open batch: full at :max_items (closed, due now), else due :max_wait after its first; its count and due time (no row when it closed meanwhile).
UPDATE scheduler_jobs
SET batch_items = batch_items + 1,
    batch_key = CASE WHEN batch_items + 1 >= :max_items THEN NULL ELSE batch_key END,
    next_ts = CASE WHEN batch_items + 1 >= :max_items THEN LEAST(next_ts, :now)
                   ELSE LEAST(next_ts, created_at + :max_wait) END,
    updated_at = :now
WHERE id = :job_id AND state = 'pending' AND run_count = 0 AND batch_key IS NOT NULL
RETURNING batch_items, next_ts;

-- name: insert_batch_args
-- A batch's arguments row ({"key", "items": []}), marked as a batch's.
INSERT INTO scheduler_job_args (job_id, args, batch) VALUES (:job_id, :args, 1);

-- name: insert_batch_item
-- One item of a batch, numbered :seq in the order added.
INSERT INTO scheduler_batch_items (job_id, seq, item) VALUES (:job_id, :seq, :item);

-- name: batch_items_of
-- The items of the batches :job_ids, each batch's in the order added.
SELECT job_id, item FROM scheduler_batch_items
WHERE job_id = ANY(:job_ids::bigint[])
ORDER BY job_id, seq;

-- name: delete_batch_items
-- Delete the items of the batches :job_ids.
DELETE FROM scheduler_batch_items WHERE job_id = ANY(:job_ids::bigint[]);

-- Schedules ---------------------------------------------------------------------------------

-- Several processes tick and complete concurrently here (SQLite has one writer), so a
-- schedule's row doubles as its lock: a tick locks the due rows it works on (due_schedules)
-- and an ending occurrence locks its schedule before deciding whether to release a held one
-- (count_unheld_active). Each waits for the other's commit, and the statements after the
-- lock see it: a tick never reads a schedule as busy while its last occurrence ends unseen,
-- leaving a held occurrence that nothing would release.

-- name: insert_schedule
-- A new schedule; nothing (no row) when the name is taken.
INSERT INTO scheduler_schedules (
    name, source, trigger_spec, fn, kind, idempotent, max_failures, initial_backoff,
    backoff_base, args, overlap, catch_up, catchup_window, jitter, paused, next_fire_ts,
    last_fire_ts, fingerprint, pace_key, pace_spacing, created_at, updated_at)
VALUES (:name, :source, :trigger_spec, :fn, :kind, :idempotent, :max_failures,
        :initial_backoff, :backoff_base, :args, :overlap, :catch_up, :catchup_window, :jitter,
        :paused, :next_fire_ts, :last_fire_ts, :fingerprint, :pace_key, :pace_spacing, :now,
        :now)
ON CONFLICT DO NOTHING
RETURNING name;

-- name: update_schedule_definition
-- A static schedule edited in code: its new definition, firing next at :next_fire_ts.
UPDATE scheduler_schedules
SET trigger_spec = :trigger_spec, fn = :fn, kind = :kind, idempotent = :idempotent,
    max_failures = :max_failures, initial_backoff = :initial_backoff,
    backoff_base = :backoff_base, args = :args, overlap = :overlap, catch_up = :catch_up,
    catchup_window = :catchup_window, jitter = :jitter, next_fire_ts = :next_fire_ts,
    fingerprint = :fingerprint, pace_key = :pace_key, pace_spacing = :pace_spacing,
    last_error = NULL, updated_at = :now
WHERE name = :name;

-- name: get_schedule
-- One schedule.
SELECT name, source, trigger_spec, fn, kind, idempotent, max_failures, initial_backoff,
       backoff_base, args, overlap, catch_up, catchup_window, jitter, paused, next_fire_ts,
       last_fire_ts, skipped, missed, fingerprint, last_error, created_at, updated_at,
       pace_key, pace_spacing
FROM scheduler_schedules WHERE name = :name;

-- name: get_schedules
-- The schedules of these names (those that exist), in no order.
SELECT name, source, trigger_spec, fn, kind, idempotent, max_failures, initial_backoff,
       backoff_base, args, overlap, catch_up, catchup_window, jitter, paused, next_fire_ts,
       last_fire_ts, skipped, missed, fingerprint, last_error, created_at, updated_at,
       pace_key, pace_spacing
FROM scheduler_schedules WHERE name = ANY(:names::text[]);

-- name: list_schedules
-- Every schedule by name, optionally only those of one source (static or runtime).
SELECT name, source, trigger_spec, fn, kind, idempotent, max_failures, initial_backoff,
       backoff_base, args, overlap, catch_up, catchup_window, jitter, paused, next_fire_ts,
       last_fire_ts, skipped, missed, fingerprint, last_error, created_at, updated_at,
       pace_key, pace_spacing
FROM scheduler_schedules
WHERE (:source::text IS NULL OR source = :source::text)
ORDER BY name;

-- name: static_fingerprints
-- What boot reconciliation compares: every schedule's name, fingerprint and source.
SELECT name, fingerprint, source FROM scheduler_schedules;

-- name: due_schedules
-- Up to :limit active schedules whose next fire time has come, earliest first.
SELECT name, source, trigger_spec, fn, kind, idempotent, max_failures, initial_backoff,
       backoff_base, args, overlap, catch_up, catchup_window, jitter, paused, next_fire_ts,
       last_fire_ts, skipped, missed, fingerprint, last_error, created_at, updated_at,
       pace_key, pace_spacing
FROM scheduler_schedules
WHERE paused = 0 AND next_fire_ts IS NOT NULL AND next_fire_ts <= :now
ORDER BY next_fire_ts, name
LIMIT :limit
FOR UPDATE;

-- name: advance_schedule
-- A tick's result, if the schedule is still where the tick read it (:from_fire_ts).
UPDATE scheduler_schedules
SET next_fire_ts = :next_fire_ts, last_fire_ts = :last_fire_ts, skipped = skipped + :skipped,
    missed = missed + :missed, last_error = :last_error, updated_at = :now
WHERE name = :name AND next_fire_ts = :from_fire_ts;

-- name: next_schedule_fire
-- The earliest next fire time of an active schedule.
SELECT next_fire_ts FROM scheduler_schedules
WHERE paused = 0 AND next_fire_ts IS NOT NULL
ORDER BY next_fire_ts
LIMIT 1;

-- name: set_paused
-- Pause or resume a schedule, with the next fire time it keeps or takes.
UPDATE scheduler_schedules SET paused = :paused, next_fire_ts = :next_fire_ts, updated_at = :now
WHERE name = :name;

-- name: delete_schedule
-- Delete a schedule (its occurrences are canceled separately).
DELETE FROM scheduler_schedules WHERE name = :name;

-- name: schedule_active_jobs
-- A schedule's occurrences that are held, pending or running, oldest fire time first.
SELECT id, state FROM scheduler_jobs
WHERE schedule_name = :schedule_name AND state IN ('held', 'pending', 'in_progress')
ORDER BY fire_ts, id;

-- name: release_held
-- Let a schedule's oldest held occurrence run, at its own time or now if that has passed.
UPDATE scheduler_jobs
SET state = 'pending', next_ts = GREATEST(next_ts, :now), updated_at = :now
WHERE id = (
    SELECT id FROM scheduler_jobs
    WHERE schedule_name = :schedule_name AND state = 'held'
    ORDER BY fire_ts, id
    LIMIT 1)
  AND state = 'held';

-- name: count_unheld_active
-- How many of a schedule's occurrences are runnable or running (not held).
-- The outer FROM runs the locking subquery to completion (one row) before the count.
SELECT (SELECT count(*) FROM scheduler_jobs
        WHERE schedule_name = :schedule_name AND state IN ('pending', 'in_progress')) AS n
FROM (SELECT count(*)
      FROM (SELECT 1 FROM scheduler_schedules WHERE name = :schedule_name FOR UPDATE) AS s)
     AS locked;

-- name: schedule_pending_ids
-- The ids of a schedule's pending and held occurrences (to cancel them).
SELECT id FROM scheduler_jobs
WHERE schedule_name = :schedule_name AND state IN ('pending', 'held');

-- name: next_job_ids
-- :n new job ids in order, for a batch of plain enqueues.
-- Drawn from the id column's own sequence, so inserts that take the default never collide.
SELECT id FROM (
    SELECT nextval(pg_get_serial_sequence('scheduler_jobs', 'id')) AS id
    FROM generate_series(1, :n::int)) AS drawn
ORDER BY id;

-- name: insert_job_with_id
-- Batched plain enqueues: ids are allocated by the transaction that holds the write lock.
-- (Here: drawn by next_job_ids, from the id column's own sequence.)
INSERT INTO scheduler_jobs (
    id, fn, kind, state, next_ts, max_failures, initial_backoff, backoff_base, idempotent,
    on_complete, name, schedule_name, fire_ts, jitter, pace_key, pace_spacing, priority,
    run_timeout, conc_key, conc_limit, created_at, updated_at)
OVERRIDING SYSTEM VALUE
VALUES (:id, :fn, :kind, 'pending', :next_ts, :max_failures, :initial_backoff, :backoff_base,
        :idempotent, :on_complete, :name, :schedule_name, :fire_ts, :jitter, :pace_key,
        :pace_spacing, :priority, :run_timeout, :conc_key, :conc_limit, :now, :now);

-- name: insert_schedules
-- Boot reconciliation's new static entries, in one executemany.
INSERT INTO scheduler_schedules (
    name, source, trigger_spec, fn, kind, idempotent, max_failures, initial_backoff,
    backoff_base, args, overlap, catch_up, catchup_window, jitter, paused, next_fire_ts,
    last_fire_ts, fingerprint, pace_key, pace_spacing, created_at, updated_at)
VALUES (:name, :source, :trigger_spec, :fn, :kind, :idempotent, :max_failures,
        :initial_backoff, :backoff_base, :args, :overlap, :catch_up, :catchup_window, :jitter,
        :paused, :next_fire_ts, :last_fire_ts, :fingerprint, :pace_key, :pace_spacing, :now,
        :now);

-- Run history --------------------------------------------------------------------------------

-- name: record_runs
-- The history rows of a batch of runs ([job id, run count, outcome, error] each), read from their jobs while those runs still hold them.
-- The job rows are locked, so a concurrent reclaim or completion of the same run waits and
-- then finds it moved on (one history row per run).
INSERT INTO scheduler_runs (
    job_id, fn, attempt, run_count, due_ts, started_at, finished_at, outcome, error, process)
SELECT j.id, j.fn, j.attempts, j.run_count, j.next_ts, j.updated_at, :now::double precision,
       r.value ->> 2, r.value ->> 3, :process::text
FROM jsonb_array_elements(:runs::jsonb) AS r(value)
JOIN scheduler_jobs AS j ON j.id = (r.value ->> 0)::bigint
WHERE j.run_count = (r.value ->> 1)::integer AND j.state = 'in_progress'
FOR UPDATE OF j;

-- name: list_runs
-- Up to :limit runs, newest first, optionally of one function and finished at or after :since.
SELECT id, job_id, fn, attempt, run_count, due_ts, started_at, finished_at, outcome, error,
       process
FROM scheduler_runs
WHERE (:fn::text IS NULL OR fn = :fn::text)
  AND (:since::double precision IS NULL OR finished_at >= :since::double precision)
ORDER BY id DESC
LIMIT :limit;

-- name: job_runs
-- Up to :limit runs of one job, newest first, optionally of one function and finished at or after :since.
SELECT id, job_id, fn, attempt, run_count, due_ts, started_at, finished_at, outcome, error,
       process
FROM scheduler_runs
WHERE job_id = :job_id AND (:fn::text IS NULL OR fn = :fn::text)
  AND (:since::double precision IS NULL OR finished_at >= :since::double precision)
ORDER BY id DESC
LIMIT :limit;

-- name: prune_runs
-- Delete up to :limit runs that finished before :before, oldest first (run retention).
DELETE FROM scheduler_runs
WHERE id IN (
    SELECT id FROM scheduler_runs WHERE finished_at < :before ORDER BY finished_at LIMIT :limit);

-- Metrics --------------------------------------------------------------------------------------

-- name: count_active_capped
-- How many jobs are pending, held and in progress, each counted up to :cap (through their indexes).
SELECT 'pending' AS state, count(*) AS n
FROM (SELECT 1 FROM scheduler_jobs WHERE state = 'pending' LIMIT :cap) AS pending
UNION ALL
SELECT 'held', count(*)
FROM (SELECT 1 FROM scheduler_jobs
      WHERE state = 'held' AND schedule_name IS NOT NULL LIMIT :cap) AS held
UNION ALL
SELECT 'in_progress', count(*)
FROM (SELECT 1 FROM scheduler_jobs
      WHERE state = 'in_progress' AND lease_expires_at IS NOT NULL LIMIT :cap) AS running;

-- name: count_due_capped
-- How many unpaced pending jobs of one kind and the default priority (0) are due at :now, counted up to :cap.
SELECT count(*) AS n
FROM (SELECT 1 FROM scheduler_jobs
      WHERE state = 'pending' AND pace_key IS NULL AND conc_key IS NULL AND priority = 0 AND kind = :kind
        AND next_ts <= :now
      LIMIT :cap) AS due;

-- name: count_ranked_due_capped
-- How many unpaced pending jobs of one kind and of priority :priority (not 0) are due at :now, counted up to :cap.
SELECT count(*) AS n
FROM (SELECT 1 FROM scheduler_jobs
      WHERE state = 'pending' AND pace_key IS NULL AND conc_key IS NULL AND priority <> 0 AND kind = :kind
        AND priority = :priority AND next_ts <= :now
      LIMIT :cap) AS due;

-- name: paced_gauges
-- Paced jobs at :now: the keys whose first pending job could start now (due, its slot open),
-- the earliest time one of those became startable, and the due paced pending jobs (up to :cap).
-- Slots are on the lease clock (:lease_now, :lease_offset ahead of :now), due times on :now's.
WITH RECURSIVE paced(k) AS (
    SELECT min(pace_key) FROM scheduler_jobs
    WHERE state = 'pending' AND pace_key IS NOT NULL
    UNION ALL
    SELECT (SELECT min(pace_key) FROM scheduler_jobs
            WHERE state = 'pending' AND pace_key IS NOT NULL AND pace_key > paced.k)
    FROM paced WHERE paced.k IS NOT NULL),
heads AS (
    SELECT (SELECT id FROM scheduler_jobs
            WHERE state = 'pending' AND pace_key = paced.k
            ORDER BY next_ts, id LIMIT 1) AS id
    FROM paced WHERE paced.k IS NOT NULL),
startable AS (
    SELECT GREATEST(j.next_ts, coalesce(p.next_start_ts - :lease_offset::float8, j.next_ts)) AS since
    FROM heads JOIN scheduler_jobs j ON j.id = heads.id
    LEFT JOIN scheduler_pace p ON p.pace_key = j.pace_key
    WHERE j.next_ts <= :now AND (p.next_start_ts IS NULL OR p.next_start_ts <= :lease_now::float8))
SELECT (SELECT count(*) FROM startable) AS startable,
       (SELECT min(since) FROM startable) AS startable_since,
       (SELECT count(*) FROM (SELECT 1 FROM scheduler_jobs
                              WHERE state = 'pending' AND pace_key IS NOT NULL
                                AND next_ts <= :now LIMIT :cap) AS d) AS due;

-- name: schedule_totals
-- Every schedule's times dropped by catch-up (missed) and by overlap (skipped), added up.
SELECT count(*) AS n, coalesce(sum(missed), 0) AS missed, coalesce(sum(skipped), 0) AS skipped
FROM scheduler_schedules;

-- Pacing ------------------------------------------------------------------------------------

-- name: paced_due
-- Up to :limit claimable paced jobs: each key's first pending job, if due and its slot open.
-- Walks the due paced jobs in due order (scheduler_jobs_paced_due, per kind), keeping each
-- that is its key's first (one probe of scheduler_jobs_paced): the cost follows the due
-- backlog, not the number of keys or of future jobs; :mutations and :actions (0 or 1) say
-- which kinds may be claimed.
-- Slots are on the lease clock (open unless ahead of :lease_now), due times on :now's.
SELECT * FROM (
    SELECT j.id, j.pace_key, j.pace_spacing, j.kind, j.next_ts, j.priority FROM scheduler_jobs j
    WHERE j.state = 'pending' AND j.pace_key IS NOT NULL AND j.kind = 'mutation' AND :mutations = 1
      AND j.next_ts <= :now
      AND j.id = (SELECT h.id FROM scheduler_jobs h
                   WHERE h.state = 'pending' AND h.pace_key = j.pace_key
                   ORDER BY h.next_ts, h.id LIMIT 1)
      AND NOT EXISTS (SELECT 1 FROM scheduler_pace p
                      WHERE p.pace_key = j.pace_key AND p.next_start_ts > :lease_now::float8)
    ORDER BY j.next_ts, j.id
    LIMIT :limit) AS mutations
UNION ALL
SELECT * FROM (
    SELECT j.id, j.pace_key, j.pace_spacing, j.kind, j.next_ts, j.priority FROM scheduler_jobs j
    WHERE j.state = 'pending' AND j.pace_key IS NOT NULL AND j.kind = 'action' AND :actions = 1
      AND j.next_ts <= :now
      AND j.id = (SELECT h.id FROM scheduler_jobs h
                   WHERE h.state = 'pending' AND h.pace_key = j.pace_key
                   ORDER BY h.next_ts, h.id LIMIT 1)
      AND NOT EXISTS (SELECT 1 FROM scheduler_pace p
                      WHERE p.pace_key = j.pace_key AND p.next_start_ts > :lease_now::float8)
    ORDER BY j.next_ts, j.id
    LIMIT :limit) AS actions
ORDER BY next_ts, id
LIMIT :limit;

-- name: paced_due_ranked
-- Up to :limit claimable paced jobs, as paced_due, chosen by priority (highest first), then due time.
-- Only asked while some pending paced job has a priority other than 0 (see next_paced): the
-- walk over the due paced jobs then goes to the end of them instead of stopping at :limit.
-- Within one key, jobs still start in due order.
SELECT * FROM (
    SELECT j.id, j.pace_key, j.pace_spacing, j.kind, j.next_ts, j.priority FROM scheduler_jobs j
    WHERE j.state = 'pending' AND j.pace_key IS NOT NULL AND j.kind = 'mutation' AND :mutations = 1
      AND j.next_ts <= :now
      AND j.id = (SELECT h.id FROM scheduler_jobs h
                   WHERE h.state = 'pending' AND h.pace_key = j.pace_key
                   ORDER BY h.next_ts, h.id LIMIT 1)
      AND NOT EXISTS (SELECT 1 FROM scheduler_pace p
                      WHERE p.pace_key = j.pace_key AND p.next_start_ts > :lease_now::float8)
    ORDER BY j.priority DESC, j.next_ts, j.id
    LIMIT :limit) AS mutations
UNION ALL
SELECT * FROM (
    SELECT j.id, j.pace_key, j.pace_spacing, j.kind, j.next_ts, j.priority FROM scheduler_jobs j
    WHERE j.state = 'pending' AND j.pace_key IS NOT NULL AND j.kind = 'action' AND :actions = 1
      AND j.next_ts <= :now
      AND j.id = (SELECT h.id FROM scheduler_jobs h
                   WHERE h.state = 'pending' AND h.pace_key = j.pace_key
                   ORDER BY h.next_ts, h.id LIMIT 1)
      AND NOT EXISTS (SELECT 1 FROM scheduler_pace p
                      WHERE p.pace_key = j.pace_key AND p.next_start_ts > :lease_now::float8)
    ORDER BY j.priority DESC, j.next_ts, j.id
    LIMIT :limit) AS actions
ORDER BY priority DESC, next_ts, id
LIMIT :limit;

-- name: next_paced
-- When the next paced job may start (the earliest over the keys of the later of its first pending job's due time and its slot, exact when it is after :now; actions counted when :actions is 1), when the next limited job may start (the earliest first pending job of a key below its limit), the next schedule fire, and whether pending jobs of another priority than 0 exist (unpaced mutations, unpaced actions, paced jobs).
-- A key's slot ahead of :now is one of few (scheduler_pace_ahead); every other key's time is
-- its first job's, found by walking the pending paced jobs in due order to the first that is
-- its key's first. Asked once per dispatch pass, so the wake-up for the schedules costs no
-- statement of its own.
-- Slots are on the lease clock (:lease_now, :lease_offset ahead of :now): read back on :now's.
-- The limited keys are walked one by one (a skip scan of scheduler_jobs_limited): each key's
-- first pending job (of the kinds counted) starts when its key has a place free; a key at
-- its limit is left out, so its queue never makes the driver wake for nothing.
WITH RECURSIVE limited(k) AS (
    SELECT (SELECT min(conc_key) FROM scheduler_jobs
            WHERE state = 'pending' AND conc_key IS NOT NULL)
    UNION ALL
    SELECT (SELECT min(conc_key) FROM scheduler_jobs
            WHERE state = 'pending' AND conc_key IS NOT NULL AND conc_key > limited.k)
    FROM limited WHERE limited.k IS NOT NULL)
SELECT (SELECT min(t) FROM (
            SELECT (SELECT GREATEST(j.next_ts, coalesce(p.next_start_ts - :lease_offset::float8, j.next_ts))
         FROM scheduler_jobs j LEFT JOIN scheduler_pace p ON p.pace_key = j.pace_key
         WHERE j.state = 'pending' AND j.pace_key IS NOT NULL AND j.kind = 'mutation'
           AND j.id = (SELECT h.id FROM scheduler_jobs h
                   WHERE h.state = 'pending' AND h.pace_key = j.pace_key
                   ORDER BY h.next_ts, h.id LIMIT 1)
           AND (p.next_start_ts IS NULL OR p.next_start_ts <= GREATEST(j.next_ts, :now) + :lease_offset::float8)
         ORDER BY j.next_ts, j.id
         LIMIT 1) AS t
            UNION ALL
            SELECT (SELECT GREATEST(j.next_ts, coalesce(p.next_start_ts - :lease_offset::float8, j.next_ts))
         FROM scheduler_jobs j LEFT JOIN scheduler_pace p ON p.pace_key = j.pace_key
         WHERE j.state = 'pending' AND j.pace_key IS NOT NULL AND j.kind = 'action'
           AND j.id = (SELECT h.id FROM scheduler_jobs h
                   WHERE h.state = 'pending' AND h.pace_key = j.pace_key
                   ORDER BY h.next_ts, h.id LIMIT 1)
           AND (p.next_start_ts IS NULL OR p.next_start_ts <= GREATEST(j.next_ts, :now) + :lease_offset::float8)
         ORDER BY j.next_ts, j.id
         LIMIT 1) AS t WHERE :actions = 1
            UNION ALL
            SELECT (SELECT min(GREATEST(j.next_ts, p.next_start_ts - :lease_offset::float8))
                    FROM scheduler_pace p
                    JOIN scheduler_jobs j ON j.id = (SELECT h.id FROM scheduler_jobs h
                         WHERE h.state = 'pending' AND h.pace_key = p.pace_key
                         ORDER BY h.next_ts, h.id LIMIT 1)
                    WHERE p.next_start_ts > :lease_now::float8 AND (j.kind = 'mutation' OR :actions = 1)) AS t
        ) AS starts) AS start_ts,
       (SELECT min(j.next_ts) FROM limited
        JOIN scheduler_jobs j ON j.id = (SELECT h.id FROM scheduler_jobs h
             WHERE h.state = 'pending' AND h.conc_key = limited.k
               AND (h.kind = 'mutation' OR :actions = 1)
             ORDER BY h.next_ts, h.id LIMIT 1)
        WHERE (SELECT count(*) FROM scheduler_jobs r
               WHERE r.state = 'in_progress' AND r.conc_key = limited.k) < j.conc_limit)
           AS limited_start_ts,
       (SELECT next_fire_ts FROM scheduler_schedules
        WHERE paused = 0 AND next_fire_ts IS NOT NULL
        ORDER BY next_fire_ts
        LIMIT 1) AS next_fire_ts,
       EXISTS (SELECT 1 FROM scheduler_jobs
               WHERE state = 'pending' AND pace_key IS NULL AND conc_key IS NULL AND priority <> 0
                 AND kind = 'mutation') AS ranked_mutations,
       EXISTS (SELECT 1 FROM scheduler_jobs
               WHERE state = 'pending' AND pace_key IS NULL AND conc_key IS NULL AND priority <> 0
                 AND kind = 'action') AS ranked_actions,
       (EXISTS (SELECT 1 FROM scheduler_jobs
                WHERE state = 'pending' AND pace_key IS NOT NULL AND priority <> 0
                  AND kind = 'mutation')
        OR EXISTS (SELECT 1 FROM scheduler_jobs
                   WHERE state = 'pending' AND pace_key IS NOT NULL AND priority <> 0
                     AND kind = 'action')) AS ranked_paced;

-- name: take_pace_slots
-- Take each key of :pace_keys whose slot is open at :now, pushing it on to its :next_starts.
-- Rows go in in key order (so concurrent claimers lock pace rows in one order), each under
-- its pace row's lock: a claimer of a key another one is taking waits for that commit, then
-- finds the slot pushed on and takes nothing. Returns the keys taken.
INSERT INTO scheduler_pace (pace_key, next_start_ts)
SELECT k.pace_key, k.next_start_ts
FROM unnest(:pace_keys::text[], :next_starts::float8[]) AS k(pace_key, next_start_ts)
ORDER BY k.pace_key
ON CONFLICT (pace_key) DO UPDATE SET next_start_ts = excluded.next_start_ts
WHERE scheduler_pace.next_start_ts <= :now
RETURNING pace_key;

-- name: claim_paced
-- Take the paced jobs of :job_ids (their keys' slots just taken) leased until :lease_until by :process, if still pending.
UPDATE scheduler_jobs
SET state = 'in_progress', run_count = run_count + 1, lease_expires_at = :lease_until,
    updated_at = :now, lease_holder = :process::text
WHERE id = ANY(:job_ids::bigint[]) AND state = 'pending'
RETURNING id, fn, kind, attempts, max_failures, initial_backoff, backoff_base, run_count,
          next_ts, on_complete, name, idempotent, schedule_name, fire_ts, priority,
          run_timeout, conc_key;

-- name: prune_pace
-- Forget the slots that opened before :before (no row means open: nothing changes).
DELETE FROM scheduler_pace WHERE next_start_ts < :before;

-- Concurrency ---------------------------------------------------------------------------------

-- name: limited_due
-- Up to :limit claimable limited jobs: due, and within their key's first pending ones (in due order) as many as its limit leaves places free.
-- A job's turn is its rank among its key's due pending jobs of the kinds that may be claimed
-- (:mutations and :actions, 0 or 1); the places taken are its key's running jobs. The cost
-- follows the due limited jobs, not the future ones.
SELECT c.id, c.conc_key, c.kind, c.next_ts, c.priority FROM (
    SELECT j.id, j.conc_key, j.conc_limit, j.kind, j.next_ts, j.priority,
           row_number() OVER (PARTITION BY j.conc_key ORDER BY j.next_ts, j.id) AS turn
    FROM scheduler_jobs j
    WHERE j.state = 'pending' AND j.conc_key IS NOT NULL AND j.next_ts <= :now
      AND ((j.kind = 'mutation' AND :mutations = 1) OR (j.kind = 'action' AND :actions = 1)))
    AS c
WHERE c.turn + (SELECT count(*) FROM scheduler_jobs r
                WHERE r.state = 'in_progress' AND r.conc_key = c.conc_key) <= c.conc_limit
ORDER BY c.next_ts, c.id
LIMIT :limit;

-- name: lock_limited_keys
-- Serialize the claims of the keys :conc_keys across processes until this transaction ends (how many keys).
-- A transaction-level advisory lock per key (its hash, under the class "SCON"), taken in one
-- order by every claimer (so two never wait for each other): a claimer of a key another one
-- is claiming waits for that commit, and its next statement (claim_limited) sees the places
-- taken by it. Keys whose hashes collide merely wait for each other.
SELECT count(*) AS n FROM (
    SELECT pg_advisory_xact_lock(1396920142, k.h)::text AS locked
    FROM (SELECT DISTINCT hashtext(c) AS h FROM unnest(:conc_keys::text[]) AS c ORDER BY h) AS k)
    AS l;

-- name: claim_limited
-- Take those of the limited jobs :job_ids still pending and within their key's limit, in due order, leased until :lease_until by :process.
-- Counted again under the keys' locks (lock_limited_keys), so a place another process took
-- meanwhile is not taken twice.
UPDATE scheduler_jobs
SET state = 'in_progress', run_count = run_count + 1, lease_expires_at = :lease_until,
    updated_at = :now, lease_holder = :process::text
WHERE id IN (
    SELECT c.id FROM (
        SELECT j.id, j.conc_key, j.conc_limit,
               row_number() OVER (PARTITION BY j.conc_key ORDER BY j.next_ts, j.id) AS turn
        FROM scheduler_jobs j
        WHERE j.id = ANY(:job_ids::bigint[]) AND j.state = 'pending') AS c
    WHERE c.turn + (SELECT count(*) FROM scheduler_jobs r
                    WHERE r.state = 'in_progress' AND r.conc_key = c.conc_key) <= c.conc_limit)
  AND state = 'pending'
RETURNING id, fn, kind, attempts, max_failures, initial_backoff, backoff_base, run_count,
          next_ts, on_complete, name, idempotent, schedule_name, fire_ts, priority,
          run_timeout, conc_key;

-- name: limited_gauges
-- Limited jobs at :now: the due ones whose turn has come under their key's limit, the earliest due time among those, and the due limited pending jobs (up to :cap).
WITH turns AS (
    SELECT j.conc_key, j.conc_limit, j.next_ts,
           row_number() OVER (PARTITION BY j.conc_key ORDER BY j.next_ts, j.id) AS turn
    FROM scheduler_jobs j
    WHERE j.state = 'pending' AND j.conc_key IS NOT NULL AND j.next_ts <= :now),
startable AS (
    SELECT t.next_ts FROM turns t
    WHERE t.turn + (SELECT count(*) FROM scheduler_jobs r
                    WHERE r.state = 'in_progress' AND r.conc_key = t.conc_key) <= t.conc_limit)
SELECT (SELECT count(*) FROM startable) AS startable,
       (SELECT min(next_ts) FROM startable) AS startable_since,
       (SELECT count(*) FROM (SELECT 1 FROM scheduler_jobs
                              WHERE state = 'pending' AND conc_key IS NOT NULL
                                AND next_ts <= :now LIMIT :cap) AS d) AS due;

-- name: claim_once
-- Take a once key for this transaction's work (1 row: taken now; 0: another transaction took it).
INSERT INTO scheduler_once (once_key, expires_at) VALUES (:once_key, :expires_at)
ON CONFLICT (once_key) DO NOTHING;

-- name: prune_once
-- Forget the once keys whose time is over.
DELETE FROM scheduler_once WHERE expires_at < :now;

-- name: take_lease
-- Take a lease that is free or expired (a row back: taken; none: another holder has it).
INSERT INTO scheduler_leases (lease_key, holder, expires_at)
VALUES (:lease_key, :holder, :now::float8 + :ttl::float8)
ON CONFLICT (lease_key) DO UPDATE
SET holder = excluded.holder, expires_at = excluded.expires_at, handed_from = NULL,
    wanted_by = NULL
WHERE scheduler_leases.expires_at <= :now OR scheduler_leases.holder = excluded.holder
RETURNING lease_key;

-- name: renew_leases
-- Extend the leases of :keys that :holder still holds (the rows back are the ones it holds).
UPDATE scheduler_leases SET expires_at = :now::float8 + :ttl::float8
WHERE holder = :holder AND lease_key = ANY(:keys::text[])
RETURNING lease_key;

-- name: release_lease
-- Give a lease back (only its holder can).
DELETE FROM scheduler_leases WHERE lease_key = :lease_key AND holder = :holder;

-- name: leases_of
-- The leases of :keys as they stand.
SELECT lease_key, holder, expires_at, handed_from, wanted_by FROM scheduler_leases
WHERE lease_key = ANY(:keys::text[]);

-- name: want_lease
-- Ask the holder of a lease to hand it over (unless someone asked already, or it is being handed).
UPDATE scheduler_leases SET wanted_by = :holder
WHERE lease_key = :lease_key AND wanted_by IS NULL AND handed_from IS NULL
  AND holder <> :holder AND expires_at > :now;

-- name: hand_lease
-- The holder hands a wanted lease to whoever asked; it names its giver until the taker starts.
UPDATE scheduler_leases
SET holder = wanted_by, handed_from = holder, wanted_by = NULL, expires_at = :now::float8 + :ttl::float8
WHERE lease_key = :lease_key AND holder = :holder AND wanted_by IS NOT NULL;

-- name: unwant_lease
-- The holder turns down a request for a lease (it holds no more than its share).
UPDATE scheduler_leases SET wanted_by = NULL WHERE lease_key = :lease_key AND holder = :holder;

-- name: confirm_lease
-- The taker of a handed lease has started: its giver may stop.
UPDATE scheduler_leases SET handed_from = NULL WHERE lease_key = :lease_key AND holder = :holder;

-- name: join_group
-- Be (or stay) a live member of a lease group until :now + :ttl.
INSERT INTO scheduler_lease_members (lease_group, holder, expires_at)
VALUES (:lease_group, :holder, :now::float8 + :ttl::float8)
ON CONFLICT (lease_group, holder) DO UPDATE SET expires_at = excluded.expires_at;

-- name: leave_group
-- Stop being a member of a lease group.
DELETE FROM scheduler_lease_members WHERE lease_group = :lease_group AND holder = :holder;

-- name: group_members
-- The live members of a lease group, in holder order (the order fair shares are given out in).
SELECT holder FROM scheduler_lease_members
WHERE lease_group = :lease_group AND expires_at > :now ORDER BY holder;

-- name: prune_lease_members
-- Forget the members of every group that stopped renewing long ago.
DELETE FROM scheduler_lease_members WHERE expires_at < :before;

-- name: put_holder
-- Record :holder's :proof (a new holder, or a new proof of one), seen :now.
INSERT INTO scheduler_holders (holder, proof, seen_at) VALUES (:holder, :proof, :now::float8)
ON CONFLICT (holder) DO UPDATE SET proof = excluded.proof, seen_at = excluded.seen_at;

-- name: holder_proof
-- The proof recorded for :holder, if any.
SELECT proof FROM scheduler_holders WHERE holder = :holder;

-- name: holder_proofs
-- Every holder with its recorded proof, in holder order.
SELECT holder, proof FROM scheduler_holders ORDER BY holder;

-- name: replace_holder_proof
-- Record :proof as :holder's, seen :now, if its recorded proof is still :old (nobody found it gone since).
UPDATE scheduler_holders SET proof = :proof, seen_at = :now::float8 WHERE holder = :holder AND proof = :old;

-- name: drop_holder
-- Forget :holder, if its recorded proof is still :proof (one that proved itself again is kept).
DELETE FROM scheduler_holders WHERE holder = :holder AND proof = :proof;

-- name: return_handed_leases
-- The leases a gone :holder was handed and had not confirmed go back to their giver.
UPDATE scheduler_leases SET holder = handed_from, handed_from = NULL, wanted_by = NULL
WHERE holder = :holder AND handed_from IS NOT NULL AND expires_at > :now;

-- name: free_holder_leases
-- The leases a gone :holder holds are free from :now.
UPDATE scheduler_leases SET expires_at = :now, handed_from = NULL, wanted_by = NULL
WHERE holder = :holder AND expires_at > :now;

-- name: forget_holder_asks
-- A gone :holder's requests for leases, and its hand-overs waiting for a confirmation, are forgotten.
UPDATE scheduler_leases
SET wanted_by = CASE WHEN wanted_by = :holder THEN NULL ELSE wanted_by END,
    handed_from = CASE WHEN handed_from = :holder THEN NULL ELSE handed_from END
WHERE wanted_by = :holder OR handed_from = :holder;

-- name: drop_holder_memberships
-- A gone :holder is no longer a member of any lease group.
DELETE FROM scheduler_lease_members WHERE holder = :holder;

-- name: gone_holder_jobs
-- Up to :limit running jobs whose lease :holder holds, with the process holding each.
SELECT id, kind, idempotent, attempts, max_failures, run_count, on_complete, schedule_name,
       lease_holder, conc_key
FROM scheduler_jobs
WHERE state = 'in_progress' AND lease_expires_at IS NOT NULL AND lease_holder = :holder
ORDER BY lease_expires_at
LIMIT :limit;

-- name: prune_holders
-- Forget the holders not seen since :before.
DELETE FROM scheduler_holders WHERE seen_at < :before;

-- name: reserve_pace_slot
-- Reserve the next start of pace key :pace_key (now, or when its slot opens) and push the slot on by :spacing; returns the reserved start.
INSERT INTO scheduler_pace (pace_key, next_start_ts) VALUES (:pace_key, :now::float8 + :spacing::float8)
ON CONFLICT (pace_key) DO UPDATE
SET next_start_ts = GREATEST(scheduler_pace.next_start_ts, :now::float8) + :spacing::float8
RETURNING next_start_ts - :spacing::float8 AS start_ts;

-- name: lock_static_schedules
-- One reconcile of the static schedules at a time (instances starting together would both
-- insert a new static cron); SQLite's write transaction already holds its one writer's lock.
SELECT pg_advisory_xact_lock(1396921155)::text AS locked;
