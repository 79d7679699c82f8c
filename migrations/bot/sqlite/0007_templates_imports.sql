-- Templates a server saves to start announcements from (/template), and the announcements
-- an import created (/import), by the stable key the export gave each one, so importing the
-- same file again creates nothing.

CREATE TABLE bot_templates (
    id            INTEGER PRIMARY KEY,
    guild_id      INTEGER NOT NULL,
    name          TEXT    NOT NULL,   -- as typed
    name_key      TEXT    NOT NULL,   -- lower-cased: names are unique whatever their case
    content       TEXT    NOT NULL,
    title         TEXT,
    silent        INTEGER NOT NULL DEFAULT 0,
    mention       TEXT,               -- 'everyone', 'here' or 'role:<id>', re-checked at use
    channel_id    INTEGER,            -- where it posts unless /schedule says otherwise
    image_name    TEXT,               -- one file posted with it (bytes kept, like attachments)
    image_type    TEXT,
    image_data    BLOB,
    author_id     INTEGER NOT NULL,
    created_at    REAL    NOT NULL,
    UNIQUE (guild_id, name_key)
);

CREATE TABLE bot_imports (
    guild_id         INTEGER NOT NULL,
    import_key       TEXT    NOT NULL,  -- the exported announcement's `key`
    announcement_id  INTEGER NOT NULL,
    imported_at      REAL    NOT NULL,
    PRIMARY KEY (guild_id, import_key)
);
