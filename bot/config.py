"""Settings from the environment, then ``.env``; every bad value is one clear error.

Every setting is declared once, as its :class:`Settings` field (:func:`setting`): its
environment variable, its parser (which holds its bounds), its default as it is written in
``.env`` (and in ``.env.example``), and what it is for. The field's default is that default,
parsed; :data:`SETTINGS` lists the declarations, in the fields' order.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from dotenv import dotenv_values
from dotenv.parser import parse_stream

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
MIB = 1024.0 * 1024.0


class ConfigError(ValueError):
    """A setting is missing or malformed; ``str(e)`` is the one line to show."""


# --- parsers: (setting name, raw text) -> value, or ConfigError ---------------------------------


@dataclass(frozen=True, slots=True)
class WholeNumber:
    minimum: int | None = None
    maximum: int | None = None

    def __call__(self, name: str, raw: str) -> int:
        try:
            value = int(raw.strip())
        except ValueError:
            raise ConfigError(f"{name} must be a whole number, got {raw!r}") from None
        if self.minimum is not None and value < self.minimum:
            raise ConfigError(f"{name} must be at least {self.minimum}, got {value}")
        if self.maximum is not None and value > self.maximum:
            raise ConfigError(f"{name} must be at most {self.maximum}, got {value}")
        return value


@dataclass(frozen=True, slots=True)
class Snowflake:
    """A Discord id: a whole number from 1 to 2**64 - 1."""

    def __call__(self, name: str, raw: str) -> int:
        value = WholeNumber(minimum=1)(name, raw)
        if value >= 2**64:
            raise ConfigError(
                f"{name} is too large for a Discord id (at most 20 digits), got {value}"
            )
        return value


@dataclass(frozen=True, slots=True)
class Number:
    """A number from ``lo`` to ``hi`` (in the setting's own unit), times ``scale``."""

    lo: float
    hi: float
    scale: float = 1.0

    def __call__(self, name: str, raw: str) -> float:
        try:
            value = float(raw.strip())
        except ValueError:
            raise ConfigError(f"{name} must be a number, got {raw!r}") from None
        if not self.lo <= value <= self.hi:
            raise ConfigError(f"{name} must be between {self.lo:g} and {self.hi:g}, got {value:g}")
        return self.scale * value


@dataclass(frozen=True, slots=True)
class Url:
    schemes: tuple[str, ...]
    strip_slash: bool = False

    def __call__(self, name: str, raw: str) -> str:
        parsed = urlparse(raw.strip())
        if parsed.scheme not in self.schemes or not parsed.netloc:
            raise ConfigError(f"{name} must be a {' or '.join(self.schemes)} URL, got {raw!r}")
        return raw.strip().rstrip("/") if self.strip_slash else raw.strip()


@dataclass(frozen=True, slots=True)
class OneOf:
    """One of ``choices``, in any case."""

    choices: tuple[str, ...]

    def __call__(self, name: str, raw: str) -> str:
        value = raw.strip().upper()
        if value not in self.choices:
            raise ConfigError(f"{name} must be one of {', '.join(self.choices)}, got {value!r}")
        return value


def _secret(name: str, raw: str) -> str:
    secret = raw.strip()
    if len(secret) < 8 or not all("!" <= c <= "~" for c in secret):
        raise ConfigError(
            f"{name} does not look like an OAuth2 client secret (check for stray text)"
        )
    return secret


def _user_ids(name: str, raw: str) -> tuple[int, ...]:
    """Discord user ids separated by commas or spaces."""
    parts = [p for p in re.split(r"[,\s]+", raw.strip()) if p]
    if not parts:
        raise ConfigError(f"{name} must list Discord user ids (comma-separated), got {raw!r}")
    return tuple(Snowflake()(name, p) for p in parts)


SHARD_COUNT_LIMIT = 4096
"""The most gateway shards crier runs (Discord's largest bots run a few thousand)."""


def _shard_ids(name: str, raw: str) -> tuple[int, ...]:
    """Shard ids separated by commas or spaces, each once (``0,1,2``)."""
    parts = [p for p in re.split(r"[,\s]+", raw.strip()) if p]
    if not parts:
        raise ConfigError(f"{name} must list shard ids (comma-separated, e.g. 0,1,2), got {raw!r}")
    ids = tuple(WholeNumber(minimum=0)(name, p) for p in parts)
    if len(set(ids)) != len(ids):
        raise ConfigError(f"{name} lists a shard twice: {raw.strip()!r}")
    return tuple(sorted(ids))


def _instance_name(name: str, raw: str) -> str:
    text = raw.strip()
    if len(text) > 100 or not all("!" <= c <= "~" for c in text):
        raise ConfigError(
            f"{name} must be at most 100 printable characters without spaces, got {raw!r}"
        )
    return text


def _token(name: str, raw: str) -> str:
    token = raw.strip()
    # A token goes in an HTTP header: printable ASCII only, no spaces or control characters.
    if len(token) < 20 or not all("!" <= c <= "~" for c in token):
        raise ConfigError(f"{name} does not look like a bot token (check for stray text)")
    return token


def without_password(url: str) -> str:
    """``url`` safe to show: a password in it is replaced by ``***``."""
    parsed = urlparse(url)
    if parsed.password is None:
        return url
    netloc = parsed.netloc.replace(f":{parsed.password}@", ":***@", 1)
    return parsed._replace(netloc=netloc).geturl()


def _database_url(name: str, raw: str) -> str:
    raw = raw.strip()
    if raw.startswith(("postgresql://", "postgres://")):
        try:
            parsed = urlparse(raw)
            parsed.port  # noqa: B018 (read for its check: a port that is no number raises)
        except ValueError as exc:
            raise ConfigError(f"{name} is not a valid URL ({exc})") from None
        if not parsed.netloc:
            raise ConfigError(f"{name} has no host: {without_password(raw)!r}")
        return raw
    if raw.startswith("sqlite:///") and len(raw) > len("sqlite:///"):
        if "\x00" in raw:
            raise ConfigError(f"{name} has a NUL character in its path")
        return raw
    raise ConfigError(
        f"{name} must be sqlite:///PATH (e.g. sqlite:///data/crier.db) or "
        f"postgresql://USER@HOST/DB, got {without_password(raw)!r}"
    )


def _http_address(name: str, raw: str) -> tuple[str, int]:
    """``HOST:PORT`` (``127.0.0.1:8080``, ``[::1]:8080``, ``0.0.0.0:9100``; port 0 takes any
    free one) as ``(host, port)``."""
    text = raw.strip()
    host, sep, port_text = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
        raise ConfigError(
            f"{name} must be HOST:PORT, e.g. 127.0.0.1:8080 (0.0.0.0:8080 for every "
            f"interface), got {raw!r}"
        )
    return host, int(port_text)


# --- the settings ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Setting:
    """How one setting is read: declared once, as the metadata of its :class:`Settings`
    field (:func:`setting`)."""

    env: str
    """The environment variable (and ``.env`` name)."""
    parse: Callable[[str, str], Any]
    default: str | None
    """The default as written in ``.env``; None: unset unless given."""
    help: str

    def read(self, raw: str | None) -> Any:
        """The value for ``raw`` (None: not given), or the default's; None if neither."""
        text = self.default if raw is None else raw
        return None if text is None else self.parse(self.env, text)


_SETTING = "crier_setting"


def setting(
    env: str,
    parse: Callable[[str, str], Any],
    default: str | None,
    help: str,
    *,
    secret: bool = False,
) -> Any:
    """A :class:`Settings` field declared with everything about its setting: the variable,
    its parser (which holds its bounds), its default as written in ``.env`` (the field's
    default is that, parsed) and what it is for; a ``secret`` is left out of the repr."""
    spec = Setting(env, parse, default, help)
    return field(default=spec.read(None), repr=not secret, metadata={_SETTING: spec})


TOKEN = Setting("DISCORD_TOKEN", _token, None, "The bot token from the Discord developer portal.")


@dataclass(frozen=True, slots=True)
class Settings:
    """The bot's settings, one field per setting, in the order they are checked; each
    field's variable, parser, default and meaning are declared with it."""

    token: str = field(repr=False, metadata={_SETTING: TOKEN})
    log_level: str = setting("LOG_LEVEL", OneOf(LOG_LEVELS), "INFO", "How much is logged.")
    database_url: str = setting(
        "DATABASE_URL",
        _database_url,
        "sqlite:///data/crier.db",
        "Where announcements and the scheduler's jobs live: sqlite:///PATH or "
        "postgresql://USER@HOST/DB.",
    )
    dev_guild_id: int | None = setting(
        "DEV_GUILD_ID",
        Snowflake(),
        None,
        "A server to register the commands in instantly while developing.",
    )
    api_base: str = setting(
        "DISCORD_API_BASE",
        Url(("http", "https"), strip_slash=True),
        "https://discord.com/api/v10",
        "Discord's REST address (a proxy, or a test fake).",
    )
    gateway_url: str = setting(
        "DISCORD_GATEWAY_URL",
        Url(("ws", "wss")),
        "wss://gateway.discord.gg/",
        "Discord's gateway address (a proxy, or a test fake).",
    )
    send_spacing: float = setting(
        "SEND_SPACING_SECONDS",
        Number(0.0, 60.0),
        "1.5",
        "Seconds between the starts of two sends to one channel, across every instance"
        " (each announcement's jobs carry the value of the instance that scheduled it).",
    )
    publish_spacing: float = setting(
        "PUBLISH_SPACING_SECONDS",
        Number(0.0, 3600.0),
        "360",
        "Seconds between the starts of two publishes (to followers) of one announcement"
        " channel's posts, across every instance: Discord allows about 10 an hour per channel;"
        " 0: not spaced (a publish the limit refuses waits as a retry).",
    )
    catch_up_window: float = setting(
        "CATCH_UP_WINDOW_MINUTES",
        Number(1.0, 60.0 * 24 * 30, scale=60.0),
        "60",
        "An announcement found this late (after downtime) is still sent, marked late; older "
        "ones are reported as missed (kept in seconds).",
    )
    lease: float = setting(
        "SCHEDULER_LEASE_SECONDS",
        Number(1.0, 600.0),
        "30",
        "How long a delivery in progress is held before another run may take it over.",
    )
    sweep_interval: float = setting(
        "SCHEDULER_SWEEP_SECONDS",
        Number(0.1, 600.0),
        "30",
        "How often leases of crashed runs are looked for (the only periodic timer).",
    )
    nonce_window: float = setting(
        "NONCE_WINDOW_SECONDS",
        Number(1.0, 300.0),
        "150",
        "How long after a first send attempt a re-send with the same nonce is still safe "
        "(Discord keeps nonces for a few minutes).",
    )
    file_max_bytes: float = setting(
        "FILE_MAX_MB",
        Number(0.01, 500.0, scale=MIB),
        "8",
        "The largest image or file one announcement may carry (kept in the database and "
        "uploaded with every post; in MiB, kept in bytes).",
    )
    guild_files_max_bytes: float = setting(
        "GUILD_FILES_MAX_MB",
        Number(0.0, 100_000.0, scale=MIB),
        "50",
        "The most the live announcements and templates of one server may keep in files "
        "together (MiB, kept in bytes).",
    )
    max_announcements: int = setting(
        "MAX_ANNOUNCEMENTS_PER_GUILD",
        WholeNumber(minimum=1),
        "1000",
        "The most live (scheduled or paused) announcements one server may have; an operator "
        "may raise it for one server (python -m bot limits).",
    )
    max_templates: int = setting(
        "MAX_TEMPLATES_PER_GUILD",
        WholeNumber(minimum=1),
        "100",
        "The most saved templates one server may have.",
    )
    min_repeat: float = setting(
        "MIN_REPEAT_MINUTES",
        Number(1.0, 60.0 * 24 * 366, scale=60.0),
        "1",
        "The shortest time between two posts of a recurring announcement (in minutes, "
        "kept in seconds; never under 1).",
    )
    event_lead: float = setting(
        "EVENT_LEAD_DAYS",
        Number(0.0, 366.0, scale=86400.0),
        "7",
        "How long before an occurrence its Discord scheduled event is created (/schedule "
        "event: true; the next occurrence's at once, whatever this says; in days, fractions "
        "accepted; kept in seconds).",
    )
    reminder_spacing: float = setting(
        "REMINDER_SPACING_SECONDS",
        Number(0.0, 60.0),
        "0.25",
        "Seconds between two reminders sent by direct message, across every instance (Discord "
        "limits how fast a bot opens and sends DMs; 10,000 members take 10,000 times this).",
    )
    report_gather: float = setting(
        "REPORT_DIGEST_SECONDS",
        Number(0.0, 3600.0),
        "60",
        "How long the failure reports of one server are gathered after the first of them, to "
        "be posted to its log channel as one message (a burst, such as an outage's, is one "
        "digest per server; 0: each is posted at once).",
    )
    edit_quiet: float = setting(
        "EDIT_QUIET_SECONDS",
        Number(0.0, 60.0),
        "3",
        "How long after the last of a burst of edits a posted message is brought up to date "
        "(one edit of the message, with the last text; never more than a minute after the "
        "first edit; 0: at once).",
    )
    events_ahead: int = setting(
        "EVENTS_AHEAD",
        WholeNumber(minimum=1, maximum=25),
        "3",
        "The most future Discord scheduled events one announcement keeps (/schedule event: "
        "true): its next occurrences' within EVENT_LEAD_DAYS, the next ones made as those "
        "pass, so a frequent announcement never fills a server's 100 (1 to 25).",
    )
    commands_per_minute: int = setting(
        "COMMANDS_PER_MINUTE",
        WholeNumber(minimum=1),
        "20",
        "The most commands (and dashboard changes) one member may use in one server in a "
        "minute, counted across every instance; more are refused, asking them to wait.",
    )
    forget_after: float = setting(
        "FORGET_AFTER_DAYS",
        Number(0.0, 3650.0, scale=86400.0),
        "30",
        "How long after a server removes the bot (or is deleted) everything of it is "
        "deleted, unless the bot is invited back first (in days, fractions accepted; kept "
        "in seconds).",
    )
    history_days: float = setting(
        "HISTORY_DAYS",
        Number(7.0, 36500.0, scale=86400.0),
        "90",
        "How long delivery records, change history and Discord events' records are kept: "
        "older ones are deleted every hour, except what /list, /info and the dashboard show "
        "(each announcement's latest deliveries and changes, and its creation); in days, "
        "fractions accepted, at least 7; kept in seconds.",
    )
    http_address: tuple[str, int] | None = setting(
        "HTTP_ADDRESS",
        _http_address,
        None,
        "Where to serve /healthz and /metrics (HOST:PORT); unset: no HTTP server.",
    )
    http_max_body: float = setting(
        "HTTP_MAX_BODY_MB",
        Number(0.01, 1024.0, scale=MIB),
        "10",
        "The largest request body the HTTP server reads (a dashboard form with its file, an "
        "import's file): a larger one is refused (413) before it is read, or as soon as it "
        "has sent that much (in MiB, kept in bytes).",
    )
    client_secret: str | None = setting(
        "DISCORD_CLIENT_SECRET",
        _secret,
        None,
        "The application's OAuth2 client secret: with HTTP_ADDRESS, serves the dashboard.",
        secret=True,
    )
    dashboard_url: str | None = setting(
        "DASHBOARD_PUBLIC_URL",
        Url(("http", "https"), strip_slash=True),
        None,
        "The dashboard's address as browsers reach it (behind a reverse proxy); its https "
        "makes the session cookie Secure. Unset: the address each request came to.",
    )
    oauth_base: str = setting(
        "DISCORD_OAUTH_BASE",
        Url(("http", "https"), strip_slash=True),
        "https://discord.com",
        "Where Discord's OAuth2 authorize page lives (a test fake).",
    )
    dashboard_operators: tuple[int, ...] | None = setting(
        "DASHBOARD_OPERATORS",
        _user_ids,
        None,
        "User ids who see the scheduler's jobs in the dashboard; unset: the application's owner.",
    )

    shard_count: int | None = setting(
        "SHARD_COUNT",
        WholeNumber(minimum=1),
        None,
        "How many gateway shards the bot runs, in every instance alike; unset: the number "
        "Discord recommends (GET /gateway/bot) when the instance starts.",
    )
    shard_ids: tuple[int, ...] | None = setting(
        "SHARD_IDS",
        _shard_ids,
        None,
        "Shards this instance runs, pinned (e.g. 0,1,2; needs SHARD_COUNT); unset: shards "
        "are shared out among the instances through leases in the database.",
    )
    shard_lease: float = setting(
        "SHARD_LEASE_SECONDS",
        Number(0.1, 600.0),
        "30",
        "How long an instance's hold on a shard lasts unless renewed (renewed every third of "
        "it): a paused instance's shards are taken over after about this long (a dead one's "
        "at once).",
    )
    shard_join_window: float = setting(
        "SHARD_JOIN_WINDOW_SECONDS",
        Number(0.0, 60.0),
        "1",
        "A calm start: an instance that starts while shards are free waits until no other "
        "instance has joined for this long, so instances started together share the shards "
        "out before any IDENTIFY (0: take them at once).",
    )
    instance_name: str | None = setting(
        "INSTANCE_NAME",
        _instance_name,
        None,
        "This instance's name in the shard leases and the run history; unset: host, process "
        "id and a random suffix.",
    )
    identify_interval: float = setting(
        "IDENTIFY_INTERVAL_SECONDS",
        Number(0.0, 60.0),
        "5",
        "Seconds between two gateway IDENTIFYs of one max_concurrency bucket, across every "
        "instance (Discord allows one per 5 s).",
    )
    session_starts_kept: int = setting(
        "SESSION_STARTS_KEPT",
        WholeNumber(minimum=0),
        "10",
        "Crier refuses to IDENTIFY once Discord's daily session start budget is down to this "
        "many, so a restart loop never spends it to zero (Discord then resets the token).",
    )

    def __post_init__(self) -> None:
        if self.client_secret is not None and self.http_max_body <= self.file_max_bytes:
            raise ConfigError(
                f"HTTP_MAX_BODY_MB ({self.http_max_body / MIB:g}) must be larger than "
                f"FILE_MAX_MB ({self.file_max_bytes / MIB:g}): the dashboard's form carries a "
                "file of that size with its other fields"
            )
        count, ids = self.shard_count, self.shard_ids
        if count is not None and count > SHARD_COUNT_LIMIT:
            raise ConfigError(f"SHARD_COUNT must be at most {SHARD_COUNT_LIMIT}, got {count}")
        if ids is not None and count is None:
            raise ConfigError(
                "SHARD_IDS needs SHARD_COUNT: pinned shards are shards of a count every "
                "instance agrees on (set SHARD_COUNT too, e.g. SHARD_COUNT=4)"
            )
        if ids is not None and count is not None and ids[-1] >= count:
            raise ConfigError(
                f"SHARD_IDS lists shard {ids[-1]}, but SHARD_COUNT={count} has shards 0 to "
                f"{count - 1}"
            )

    @property
    def database(self) -> tuple[str, str]:
        """``("sqlite", path)`` or ``("postgres", dsn)``."""
        return database_kind(self.database_url)


def database_kind(url: str) -> tuple[str, str]:
    """A ``DATABASE_URL`` (already checked) as ``("sqlite", path)`` or ``("postgres", dsn)``."""
    if url.startswith(("postgresql://", "postgres://")):
        return "postgres", url
    return "sqlite", url[len("sqlite:///") :]


_FIELDS: dict[str, Setting] = {f.name: f.metadata[_SETTING] for f in fields(Settings)}
SETTINGS: tuple[Setting, ...] = tuple(_FIELDS.values())
"""Every setting, in the order they are checked (the order of :class:`Settings`' fields)."""


def default(field_name: str) -> Any:
    """The default value of the :class:`Settings` field ``field_name``."""
    return _FIELDS[field_name].read(None)


DEFAULT_API_BASE: str = default("api_base")
DEFAULT_GATEWAY: str = default("gateway_url")
DEFAULT_DATABASE_URL: str = default("database_url")


def _read_env_file(path: Path) -> dict[str, str]:
    """The settings in a ``.env`` file; one that can't be read whole is one ConfigError
    (python-dotenv alone would raise on bytes that aren't UTF-8, and only warn about a
    line it can't parse, such as an unterminated quote, then carry on without it)."""
    try:
        text = path.read_text("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path} is not UTF-8 text (byte {exc.start + 1} can't be read): save it as UTF-8"
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    for binding in parse_stream(io.StringIO(text)):
        if binding.error:  # the line itself is not shown: it may hold the token
            raise ConfigError(
                f"{path}: line {binding.original.line} is not a NAME=value setting "
                "(check its quotes)"
            )
    return {k: v for k, v in dotenv_values(stream=io.StringIO(text)).items() if v is not None}


def _raw_values(environ: Mapping[str, str] | None, env_file: str | Path | None) -> dict[str, str]:
    """The environment over ``env_file`` (if it exists), unparsed."""
    values: dict[str, str] = {}
    if env_file is not None and Path(env_file).is_file():
        values.update(_read_env_file(Path(env_file)))
    values.update(os.environ if environ is None else environ)
    return values


def load_setting(
    field_name: str,
    environ: Mapping[str, str] | None = None,
    env_file: str | Path | None = ".env",
) -> Any:
    """One setting (the :class:`Settings` field ``field_name``) read as :func:`load_settings`
    reads it, without needing the others (``python -m bot backup`` needs the database
    alone, not the token)."""
    spec = _FIELDS[field_name]
    raw = _raw_values(environ, env_file).get(spec.env)
    return spec.read(raw if raw is not None and raw.strip() != "" else None)


def load_settings(
    environ: Mapping[str, str] | None = None, env_file: str | Path | None = ".env"
) -> Settings:
    """Read settings: the environment wins over ``env_file`` (if it exists)."""
    values = _raw_values(environ, env_file)

    def get(name: str) -> str | None:
        value = values.get(name)
        return value if value is not None and value.strip() != "" else None

    raw_token = get(TOKEN.env)
    if raw_token is None:
        raise ConfigError(
            f"{TOKEN.env} is not set: put your bot token in .env (see .env.example) "
            "or in the environment"
        )
    token: str = TOKEN.read(raw_token)
    try:
        return Settings(
            token=token,
            **{name: s.read(get(s.env)) for name, s in _FIELDS.items() if s is not TOKEN},
        )
    except ConfigError as exc:  # a value pasted into the wrong setting may be the token
        raise ConfigError(str(exc).replace(token, "[token]")) from None
