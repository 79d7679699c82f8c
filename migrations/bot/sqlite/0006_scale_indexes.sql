-- Indexes for guilds with many announcements (a /list page and an id autocomplete read a
-- page's worth of index entries, not every row of the guild):
-- - a guild's announcements in one state by number (the autocomplete, newest first; counts);
-- - its scheduled one-offs by their time, and its recurring ones with their schedule (the
--   upcoming part of /list).
DROP INDEX bot_announcements_guild;
CREATE INDEX bot_announcements_guild ON bot_announcements (guild_id, state, local_id);
CREATE INDEX bot_announcements_one_offs ON bot_announcements (guild_id, state, first_ts, local_id)
    WHERE schedule_name IS NULL;
CREATE INDEX bot_announcements_recurring
    ON bot_announcements (guild_id, state, schedule_name, local_id)
    WHERE schedule_name IS NOT NULL;
