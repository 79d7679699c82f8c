-- What the first attempt at an occurrence showed, recorded with it so that a re-send of an
-- interrupted attempt sends the same request: the language it was said in ('' for English)
-- and the occurrence's Discord event it linked to (NULL: none). A row from before this
-- (shown_locale NULL) is re-sent as it was before: both read at the re-send.
ALTER TABLE bot_deliveries ADD COLUMN shown_locale TEXT;
ALTER TABLE bot_deliveries ADD COLUMN shown_event_id BIGINT;
