-- How a post looks beyond its text and title (/style, the dashboard): its embed's colour,
-- footer, thumbnail, title link and fields, and its link buttons, as JSON
-- ({"color": 5793266, "footer": "…", "thumbnail": "logo.png", "url": "https://…",
--   "fields": [["name", "value", true], …], "buttons": [["label", "https://…"], …]};
-- NULL: none of it).
ALTER TABLE bot_announcements ADD COLUMN style TEXT;

-- The thumbnail's bytes, downloaded once (Discord's attachment URLs expire) and uploaded
-- with every post like the files (bot_attachments); counted in the server's files.
CREATE TABLE bot_thumbnails (
    announcement_id  INTEGER PRIMARY KEY,
    guild_id         INTEGER NOT NULL,
    filename         TEXT    NOT NULL,
    content_type     TEXT,
    size             INTEGER NOT NULL,
    data             BLOB NOT NULL,
    created_at       REAL NOT NULL
);
CREATE INDEX bot_thumbnails_guild ON bot_thumbnails (guild_id);

-- A template keeps the style of what it was saved from, its thumbnail's bytes included
-- (thumbnail_size counts in the server's files like image_size).
ALTER TABLE bot_templates ADD COLUMN style TEXT;
ALTER TABLE bot_templates ADD COLUMN thumbnail_name TEXT;
ALTER TABLE bot_templates ADD COLUMN thumbnail_type TEXT;
ALTER TABLE bot_templates ADD COLUMN thumbnail_data BLOB;
ALTER TABLE bot_templates ADD COLUMN thumbnail_size INTEGER NOT NULL DEFAULT 0;
