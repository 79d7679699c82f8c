-- The lease sweep's index, with a predicate that only the sweep's query implies.
--
-- Every fenced single-job statement (finish_*, release, extend_lease, reclaim_pending) says
-- `WHERE id = $1 AND run_count = $2 AND state = 'in_progress'`, which implies the old
-- predicate `state = 'in_progress'`. With statistics taken while few jobs were in progress
-- (the usual case) PostgreSQL then costs this index like the primary key and may pick it:
-- each completion scanned every in-progress job, so recording N completions cost O(N^2).
-- `lease_expires_at IS NOT NULL` holds for exactly the same rows (the lease is set by a
-- claim and cleared by every way out of 'in_progress'), and is implied by the sweep's
-- `lease_expires_at < $1`, not by those statements: they use the primary key.
DROP INDEX scheduler_jobs_lease;
CREATE INDEX scheduler_jobs_lease ON scheduler_jobs (lease_expires_at)
    WHERE state = 'in_progress' AND lease_expires_at IS NOT NULL;
