-- Retention (HISTORY_DAYS): an hourly job deletes the delivery rows, history entries and
-- Discord events' rows older than that, but for what /list, /info and the dashboard show.
-- What the deleted delivery rows counted is kept on their announcement, so an
-- {occurrence} number and a number of posts (`times`) go on counting them: every recorded
-- occurrence (any state), and those posted or being posted.
ALTER TABLE bot_announcements ADD COLUMN pruned_occurrences INTEGER NOT NULL DEFAULT 0;
ALTER TABLE bot_announcements ADD COLUMN pruned_posts INTEGER NOT NULL DEFAULT 0;
