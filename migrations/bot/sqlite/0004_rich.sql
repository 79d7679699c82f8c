-- Rich announcements and every destination: an embed title, silent posts, images kept as
-- bytes, threads, forum posts (tags) and announcement channels (publishing after the post).

-- What the post shows and where it goes.
ALTER TABLE bot_announcements ADD COLUMN title TEXT;              -- set: the post is an embed
ALTER TABLE bot_announcements ADD COLUMN silent INTEGER NOT NULL DEFAULT 0;  -- @silent
ALTER TABLE bot_announcements ADD COLUMN destination TEXT NOT NULL DEFAULT 'text';
    -- 'text', 'announcement', 'thread' or 'forum' (checked in code)
ALTER TABLE bot_announcements ADD COLUMN publish INTEGER NOT NULL DEFAULT 0;  -- crosspost it
ALTER TABLE bot_announcements ADD COLUMN tags TEXT;               -- JSON: a forum post's tag ids

-- A forum post's thread (its id is also its first message's), recorded once it exists; the
-- publish step of a post in an announcement channel and how it ended.
ALTER TABLE bot_deliveries ADD COLUMN thread_id INTEGER;
ALTER TABLE bot_deliveries ADD COLUMN publish_state TEXT;
    -- NULL (nothing to publish), 'pending', 'published', 'published_late' or 'failed'
ALTER TABLE bot_deliveries ADD COLUMN publish_error TEXT;
ALTER TABLE bot_deliveries ADD COLUMN published_at REAL;

-- Files uploaded with every post, downloaded once at scheduling (Discord's attachment URLs
-- are signed and expire). Listing never reads `data`.
CREATE TABLE bot_attachments (
    id               INTEGER PRIMARY KEY,
    announcement_id  INTEGER NOT NULL,
    guild_id         INTEGER NOT NULL,
    position         INTEGER NOT NULL,
    filename         TEXT    NOT NULL,
    content_type     TEXT,
    size             INTEGER NOT NULL,
    data             BLOB    NOT NULL,
    created_at       REAL    NOT NULL,
    UNIQUE (announcement_id, position)
);
CREATE INDEX bot_attachments_guild ON bot_attachments (guild_id);
