-- Named leases: a process holds a key ("shard 3 of 8") for a while and renews it; a lease
-- not renewed in time is free for another process. A lease being handed over names its
-- giver (handed_from) until the taker confirms it has started; a member short of its fair
-- share asks for one (wanted_by).
CREATE TABLE scheduler_leases (
    lease_key   TEXT PRIMARY KEY,
    holder      TEXT NOT NULL,
    expires_at  DOUBLE PRECISION NOT NULL,
    handed_from TEXT,
    wanted_by   TEXT
);

-- The live members of a lease group, each renewing its row: fair shares are worked out
-- among them.
CREATE TABLE scheduler_lease_members (
    lease_group TEXT NOT NULL,
    holder      TEXT NOT NULL,
    expires_at  DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (lease_group, holder)
);
