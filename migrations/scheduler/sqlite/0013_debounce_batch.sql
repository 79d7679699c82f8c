-- Composed work (issue 34): debounce and batch. A debounced job carries its key while it is
-- open (pending and never started): calls with the same function and key find it and move
-- it on with their arguments. A batch's job carries its key while it is open to more items
-- and counts them; it closes when full (its key cleared) or when it starts. One open job per
-- function and key, decided by these unique indexes (as an idempotency key's is), so two
-- processes calling at once make one job; they hold only open jobs, so they stay small.
ALTER TABLE scheduler_jobs ADD COLUMN debounce_key TEXT;
ALTER TABLE scheduler_jobs ADD COLUMN batch_key TEXT;
ALTER TABLE scheduler_jobs ADD COLUMN batch_items INTEGER;
CREATE UNIQUE INDEX scheduler_jobs_open_debounce ON scheduler_jobs (fn, debounce_key)
    WHERE debounce_key IS NOT NULL AND state = 'pending' AND run_count = 0;
CREATE UNIQUE INDEX scheduler_jobs_open_batch ON scheduler_jobs (fn, batch_key)
    WHERE batch_key IS NOT NULL AND state = 'pending' AND run_count = 0;

-- A batch's items, numbered in the order they were added; its arguments row is marked
-- batch = 1, and a claim reads the items back into its arguments.
ALTER TABLE scheduler_job_args ADD COLUMN batch INTEGER;
CREATE TABLE scheduler_batch_items (
    job_id INTEGER NOT NULL,
    seq    INTEGER NOT NULL,
    item   TEXT    NOT NULL,
    PRIMARY KEY (job_id, seq)
) WITHOUT ROWID;
