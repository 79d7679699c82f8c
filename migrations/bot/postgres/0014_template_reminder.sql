-- A template keeps the reminder lead of what it was saved from (/edit reminder:): applied,
-- the announcement reminds the members who ask as the template's did. NULL: no reminders.
ALTER TABLE bot_templates ADD COLUMN reminder_s DOUBLE PRECISION;
