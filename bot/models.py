"""The bot's records: announcements, guild settings, deliveries, and their states.

Plain frozen dataclasses shared by the data layer (:mod:`bot.db`), which builds them from
rows, and the domain layer (:mod:`bot.announcements`), which decides what they mean.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from .parsing import RepeatRule


class AnnouncementState(StrEnum):
    """Where an announcement stands (stored as these strings in ``bot_announcements``)."""

    SCHEDULED = "scheduled"
    PAUSED = "paused"
    SENT = "sent"
    FAILED = "failed"
    CANCELED = "canceled"


LIVE_STATES = (AnnouncementState.SCHEDULED, AnnouncementState.PAUSED)
"""States in which an announcement may still post (and may be canceled)."""


class DeliveryState(StrEnum):
    """Where one occurrence's delivery stands (stored as these strings in ``bot_deliveries``)."""

    SENDING = "sending"
    SENT = "sent"
    FAILED = "failed"
    MISSED = "missed"


@dataclass(frozen=True, slots=True)
class GuildSettings:
    guild_id: int
    timezone: str | None = None
    manager_role_id: int | None = None
    log_channel_id: int | None = None


@dataclass(frozen=True, slots=True)
class Draft:
    """An announcement that passed every check, ready to be written."""

    guild_id: int
    channel_id: int
    author_id: int
    content: str
    mention: str | None
    allowed_mentions: dict[str, Any]
    first: datetime
    timezone: str
    repeat: RepeatRule | None


@dataclass(frozen=True, slots=True)
class Announcement:
    id: int
    guild_id: int
    local_id: int
    channel_id: int
    author_id: int
    content: str
    mention: str | None
    allowed_mentions: dict[str, Any]
    first_ts: float
    timezone: str
    repeat_kind: str | None
    repeat_cron: str | None
    repeat_every: float | None
    repeat_words: str | None
    job_id: int | None
    schedule_name: str | None
    state: AnnouncementState
    failure: str | None
    last_message_id: int | None
    created_at: float
    updated_at: float

    @property
    def recurring(self) -> bool:
        return self.repeat_kind is not None

    @property
    def live(self) -> bool:
        return self.state in LIVE_STATES

    @property
    def text(self) -> str:
        """The message as posted: the chosen mention first, then the text exactly as typed."""
        if self.mention is None:
            return self.content
        return f"{mention_markup(self.mention)} {self.content}"


def mention_markup(mention: str) -> str:
    """The markup that pings ``mention`` (``everyone``, ``here`` or ``role:<id>``)."""
    if mention in ("everyone", "here"):
        return f"@{mention}"
    return f"<@&{mention.removeprefix('role:')}>"


@dataclass(frozen=True, slots=True)
class DeliveryRecord:
    """What is recorded of one occurrence's delivery so far."""

    state: DeliveryState
    message_id: int | None
    first_attempt_at: float
    nonce: str
