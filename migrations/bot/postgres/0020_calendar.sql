-- A server's calendar feed (/calendar): the secret of its private address
-- (/calendar/<token>.ics), one per server; /calendar reset: true writes a new one and the old
-- address stops working. The address is looked up by the SHA-256 of its token (token_hash),
-- never by the token itself; the token is kept to show the address again to a manager
-- (whoever reads this table reads the announcements the feed shows anyway). Deleted when the
-- server is forgotten.
CREATE TABLE bot_calendar_tokens (
    guild_id   BIGINT           PRIMARY KEY,
    token      TEXT             NOT NULL,
    token_hash TEXT             NOT NULL UNIQUE,
    created_by BIGINT           NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
);

-- How many times each announcement was edited (its history's 'edited' entries, counted as
-- they are written): the calendar feed's SEQUENCE, which must never go down, while
-- HISTORY_DAYS prunes the history itself.
ALTER TABLE bot_announcements ADD COLUMN edits INTEGER NOT NULL DEFAULT 0;
UPDATE bot_announcements SET edits = (
    SELECT count(*) FROM bot_history h
    WHERE h.announcement_id = bot_announcements.id AND h.action = 'edited'
);
