-- The parts of a repeat rule five cron fields can't say, so the rule can be rebuilt exactly
-- (by /edit, by the dashboard): which weekdays of the month (`2,4` for the 2nd and 4th, `-1`
-- for the last) and a date step as JSON ({"count": 2, "unit": "week", "since": "2026-12-04"}).
ALTER TABLE bot_announcements ADD COLUMN repeat_nth TEXT;
ALTER TABLE bot_announcements ADD COLUMN repeat_step TEXT;
