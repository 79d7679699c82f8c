"""Settings from the environment, then ``.env``; every bad value is one clear error."""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from dotenv import dotenv_values
from dotenv.parser import parse_stream

DEFAULT_API_BASE = "https://discord.com/api/v10"
DEFAULT_GATEWAY = "wss://gateway.discord.gg/"
DEFAULT_DATABASE_URL = "sqlite:///data/crier.db"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class ConfigError(ValueError):
    """A setting is missing or malformed; ``str(e)`` is the one line to show."""


@dataclass(frozen=True, slots=True)
class Settings:
    token: str = field(repr=False)
    database_url: str = DEFAULT_DATABASE_URL
    dev_guild_id: int | None = None
    log_level: str = "INFO"
    api_base: str = DEFAULT_API_BASE
    gateway_url: str = DEFAULT_GATEWAY
    send_spacing: float = 1.5
    """Seconds between two sends to one channel."""
    catch_up_window: float = 3600.0
    """An announcement found this late (after downtime) is still sent, marked late; older
    ones are reported as missed."""
    nonce_window: float = 150.0
    """How long after a first send attempt a re-send with the same nonce is still safe
    (Discord keeps nonces for a few minutes)."""
    lease: float = 30.0
    """How long a delivery in progress is held before another run may take it over."""
    sweep_interval: float = 30.0
    """How often leases of crashed runs are looked for (the only periodic timer)."""

    @property
    def database(self) -> tuple[str, str]:
        """``("sqlite", path)`` or ``("postgres", dsn)``."""
        url = self.database_url
        if url.startswith(("postgresql://", "postgres://")):
            return "postgres", url
        return "sqlite", url[len("sqlite:///") :]


def _int(name: str, raw: str, *, minimum: int | None = None) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, got {value}")
    return value


def _snowflake(name: str, raw: str) -> int:
    value = _int(name, raw, minimum=1)
    if value >= 2**64:
        raise ConfigError(f"{name} is too large for a Discord id (at most 20 digits), got {value}")
    return value


def _float(name: str, raw: str, lo: float, hi: float) -> float:
    try:
        value = float(raw.strip())
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from None
    if not lo <= value <= hi:
        raise ConfigError(f"{name} must be between {lo:g} and {hi:g}, got {value:g}")
    return value


def _url(name: str, raw: str, schemes: tuple[str, ...]) -> str:
    parsed = urlparse(raw.strip())
    if parsed.scheme not in schemes or not parsed.netloc:
        raise ConfigError(f"{name} must be a {' or '.join(schemes)} URL, got {raw!r}")
    return raw.strip()


def _without_password(url: str) -> str:
    """``url`` safe to show: a password in it is replaced by ``***``."""
    parsed = urlparse(url)
    if parsed.password is None:
        return url
    netloc = parsed.netloc.replace(f":{parsed.password}@", ":***@", 1)
    return parsed._replace(netloc=netloc).geturl()


def _database_url(raw: str) -> str:
    raw = raw.strip()
    if raw.startswith(("postgresql://", "postgres://")):
        if not urlparse(raw).netloc:
            raise ConfigError(f"DATABASE_URL has no host: {_without_password(raw)!r}")
        return raw
    if raw.startswith("sqlite:///") and len(raw) > len("sqlite:///"):
        if "\x00" in raw:
            raise ConfigError("DATABASE_URL has a NUL character in its path")
        return raw
    raise ConfigError(
        "DATABASE_URL must be sqlite:///PATH (e.g. sqlite:///data/crier.db) or "
        f"postgresql://USER@HOST/DB, got {_without_password(raw)!r}"
    )


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


def load_settings(
    environ: Mapping[str, str] | None = None, env_file: str | Path | None = ".env"
) -> Settings:
    """Read settings: the environment wins over ``env_file`` (if it exists)."""
    values: dict[str, str] = {}
    if env_file is not None and Path(env_file).is_file():
        values.update(_read_env_file(Path(env_file)))
    values.update(os.environ if environ is None else environ)

    def get(name: str) -> str | None:
        value = values.get(name)
        return value if value is not None and value.strip() != "" else None

    token = get("DISCORD_TOKEN")
    if token is None:
        raise ConfigError(
            "DISCORD_TOKEN is not set: put your bot token in .env (see .env.example) "
            "or in the environment"
        )
    token = token.strip()
    # A token goes in an HTTP header: printable ASCII only, no spaces or control characters.
    if len(token) < 20 or not all("!" <= c <= "~" for c in token):
        raise ConfigError("DISCORD_TOKEN does not look like a bot token (check for stray text)")
    try:
        return _with_token(token, get)
    except ConfigError as exc:  # a value pasted into the wrong setting may be the token
        raise ConfigError(str(exc).replace(token, "[token]")) from None


def _with_token(token: str, get: Callable[[str], str | None]) -> Settings:
    level = (get("LOG_LEVEL") or "INFO").strip().upper()
    if level not in LOG_LEVELS:
        raise ConfigError(f"LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}, got {level!r}")
    dev_guild = get("DEV_GUILD_ID")
    spacing = get("SEND_SPACING_SECONDS")
    window = get("CATCH_UP_WINDOW_MINUTES")
    lease = get("SCHEDULER_LEASE_SECONDS")
    sweep = get("SCHEDULER_SWEEP_SECONDS")
    nonce_window = get("NONCE_WINDOW_SECONDS")
    return Settings(
        token=token,
        database_url=_database_url(get("DATABASE_URL") or DEFAULT_DATABASE_URL),
        dev_guild_id=None if dev_guild is None else _snowflake("DEV_GUILD_ID", dev_guild),
        log_level=level,
        api_base=_url(
            "DISCORD_API_BASE", get("DISCORD_API_BASE") or DEFAULT_API_BASE, ("http", "https")
        ).rstrip("/"),
        gateway_url=_url(
            "DISCORD_GATEWAY_URL", get("DISCORD_GATEWAY_URL") or DEFAULT_GATEWAY, ("ws", "wss")
        ),
        send_spacing=1.5 if spacing is None else _float("SEND_SPACING_SECONDS", spacing, 0.0, 60.0),
        catch_up_window=3600.0
        if window is None
        else 60.0 * _float("CATCH_UP_WINDOW_MINUTES", window, 1.0, 60.0 * 24 * 30),
        lease=30.0 if lease is None else _float("SCHEDULER_LEASE_SECONDS", lease, 1.0, 600.0),
        sweep_interval=30.0
        if sweep is None
        else _float("SCHEDULER_SWEEP_SECONDS", sweep, 0.1, 600.0),
        nonce_window=150.0
        if nonce_window is None
        else _float("NONCE_WINDOW_SECONDS", nonce_window, 1.0, 300.0),
    )
