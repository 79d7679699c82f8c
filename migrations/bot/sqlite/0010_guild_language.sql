-- A server's /settings language gets a column of its own in its settings row. Until now it
-- was kept in bot_meta under 'guild_language:<guild id>'; those rows move here.
ALTER TABLE bot_guild_settings ADD COLUMN language TEXT;

INSERT INTO bot_guild_settings (guild_id, updated_at, language)
SELECT CAST(substr(key, 16) AS INTEGER), CAST(strftime('%s', 'now') AS REAL), value
FROM bot_meta
WHERE key LIKE 'guild\_language:%' ESCAPE '\'
ON CONFLICT (guild_id) DO UPDATE SET language = excluded.language;

DELETE FROM bot_meta WHERE key LIKE 'guild\_language:%' ESCAPE '\';
