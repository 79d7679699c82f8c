-- The holders of leases (each scheduler's process id) with what proves they are alive: the
-- proof their store records (on SQLite their process, pid and start time; on PostgreSQL
-- their database session's advisory lock), which any process sharing the database can
-- check. A holder found gone loses its named leases and its jobs' leases at once, instead
-- of when they expire. seen_at (lease clock) is refreshed by the holder now and then: a
-- row nobody can judge (another machine's) is forgotten once it stops being refreshed.
CREATE TABLE scheduler_holders (
    holder  TEXT PRIMARY KEY,
    proof   TEXT NOT NULL,
    seen_at REAL NOT NULL
);
