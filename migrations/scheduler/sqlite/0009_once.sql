-- Once keys: an application marks a block of work with a key (an outside event's id, e.g. a
-- chat interaction or a webhook delivery that several processes receive), and the first write
-- transaction of that block records the key in the same commit as its writes. Any other
-- transaction carrying the same key, in any process sharing the database, finds it taken and
-- writes nothing. A key is kept until expires_at, then pruned by the lease sweep.
CREATE TABLE scheduler_once (
    once_key   TEXT PRIMARY KEY,
    expires_at REAL NOT NULL
);
CREATE INDEX scheduler_once_expiry ON scheduler_once (expires_at);
