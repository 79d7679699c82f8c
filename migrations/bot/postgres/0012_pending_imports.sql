-- An import's dry run waiting for its confirmation (/import's button, the dashboard's
-- upload) gets a table of its own: one per member and server (a new dry run replaces the
-- member's older one), deleted when confirmed, when it expires (15 minutes: at the next dry
-- run anywhere, and by the daily retention job) and when the server is forgotten. They were
-- kept in bot_meta under 'import:<guild>:<token>', never deleted unless the server ran
-- /import again; those rows (a quarter of an hour's worth of use at most) are dropped: a
-- member who ran a dry run just before the upgrade runs it again.
CREATE TABLE bot_pending_imports (
    guild_id   BIGINT  NOT NULL,
    user_id    BIGINT  NOT NULL,      -- the member who ran it: the only one who may confirm it
    token      TEXT    NOT NULL,      -- named by its button or form
    document   TEXT    NOT NULL,      -- the file, as uploaded (at most MAX_IMPORT_BYTES)
    created_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (guild_id, user_id)
);
CREATE INDEX bot_pending_imports_created ON bot_pending_imports (created_at);
DELETE FROM bot_meta WHERE key LIKE 'import:%';

-- A template's file counts toward its server's GUILD_FILES_MAX_MB with its announcements'
-- files: its size is kept beside it (as bot_attachments keeps theirs), so the count reads no
-- file's bytes.
ALTER TABLE bot_templates ADD COLUMN image_size BIGINT NOT NULL DEFAULT 0;
UPDATE bot_templates SET image_size = length(image_data) WHERE image_data IS NOT NULL;
