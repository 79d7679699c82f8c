-- The lease sweep's index, with a predicate that only the sweep's query implies (as on
-- PostgreSQL, whose planner could otherwise pick it over the primary key for every fenced
-- single-job statement; SQLite looks rows up by rowid either way). The index holds the same
-- rows: the lease is set by a claim and cleared by every way out of 'in_progress'.
DROP INDEX scheduler_jobs_lease;
CREATE INDEX scheduler_jobs_lease ON scheduler_jobs (lease_expires_at)
    WHERE state = 'in_progress' AND lease_expires_at IS NOT NULL;
