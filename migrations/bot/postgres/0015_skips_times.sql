-- A repeating announcement's exceptions, part of its rule: the spans of local wall time it
-- does not post in (/skip id: date:, /skip id: from: to:), as JSON
-- ([["2026-12-25T00:00:00", "2026-12-25T23:59:59.999999"], ...], in its zone; NULL: none),
-- and how many posts it makes before it ends (/edit times:; NULL: no such end).
ALTER TABLE bot_announcements ADD COLUMN repeat_skips TEXT;
ALTER TABLE bot_announcements ADD COLUMN repeat_times INTEGER;
