"""The bot's records: announcements, guild settings, deliveries, and their states.

Plain frozen dataclasses shared by the data layer (:mod:`bot.db`), which builds them from
rows, and the domain layer (:mod:`bot.announcements`), which decides what they mean.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, fields, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Final, Literal

from scheduler.triggers import DateStep

from .config import default
from .parsing import RepeatRule, repeat_kind
from .parsing.skips import Skip


class AnnouncementState(StrEnum):
    """Where an announcement stands (stored as these strings in ``bot_announcements``)."""

    SCHEDULED = "scheduled"
    PAUSED = "paused"
    SENT = "sent"
    FAILED = "failed"
    CANCELED = "canceled"
    DONE = "done"
    """A recurring announcement past its ``until``: it posts nothing more."""


LIVE_STATES = (AnnouncementState.SCHEDULED, AnnouncementState.PAUSED)
"""States in which an announcement may still post (and may be canceled)."""


class DeliveryState(StrEnum):
    """Where one occurrence's delivery stands (stored as these strings in ``bot_deliveries``)."""

    SENDING = "sending"
    SENT = "sent"
    FAILED = "failed"
    MISSED = "missed"
    SKIPPED = "skipped"
    """Skipped on purpose (``/skip``): the occurrence's job finds it and posts nothing."""


class Destination(StrEnum):
    """What kind of channel an announcement posts in (stored in ``bot_announcements``)."""

    TEXT = "text"
    ANNOUNCEMENT = "announcement"
    """An announcement (news) channel: the post may be published to following servers."""
    THREAD = "thread"
    """An existing thread: posted in it (an archived one is unarchived by the send)."""
    FORUM = "forum"
    """A forum channel: each occurrence is a new forum post, titled by ``title``."""


class PublishState(StrEnum):
    """How publishing a post in an announcement channel ended (``bot_deliveries``)."""

    PENDING = "pending"
    PUBLISHED = "published"
    PUBLISHED_LATE = "published_late"
    FAILED = "failed"
    """Not published; ``publish_error`` says why."""


class HistoryAction(StrEnum):
    """A change in an announcement's life, as kept in ``bot_history`` and shown by /info."""

    CREATED = "created"
    EDITED = "edited"
    PAUSED = "paused"
    RESUMED = "resumed"
    SKIPPED = "skipped"
    CANCELED = "canceled"
    ENDED = "ended"
    """A recurring announcement reached its ``until``."""
    FAILED = "failed"
    POST_UPDATED = "post_updated"
    """The posted message was edited in place to show the announcement's new text."""
    POST_UPDATE_FAILED = "post_update_failed"


@dataclass(frozen=True, slots=True)
class GuildSettings:
    guild_id: int
    timezone: str | None = None
    manager_role_id: int | None = None
    log_channel_id: int | None = None
    language: str | None = None
    """The locale of what the bot posts for everyone (None: the server's own)."""


@dataclass(frozen=True, slots=True)
class Limits:
    """How much one server may do: the instance's settings, or one server's (its
    :class:`GuildLimits` applied with :meth:`for_guild`)."""

    max_announcements: int = default("max_announcements")
    """Live (scheduled or paused) announcements (``MAX_ANNOUNCEMENTS_PER_GUILD``)."""
    max_templates: int = default("max_templates")
    """Saved templates (``MAX_TEMPLATES_PER_GUILD``)."""
    files_max_bytes: float = default("guild_files_max_bytes")
    """Bytes of files kept by its live announcements together (``GUILD_FILES_MAX_MB``)."""
    min_repeat_seconds: float = default("min_repeat")
    """The shortest time between two posts of a recurring one (``MIN_REPEAT_MINUTES``)."""
    commands_per_minute: int = default("commands_per_minute")
    """Commands one member may use in a minute (``COMMANDS_PER_MINUTE``)."""

    def for_guild(self, override: GuildLimits | None) -> Limits:
        """These limits with what an operator set for one server in their place."""
        if override is None:
            return self
        changes = {
            f.name: getattr(override, f.name)
            for f in fields(Limits)
            if getattr(override, f.name) is not None
        }
        return replace(self, **changes)


LIMIT_SETTINGS = {
    "max_announcements": "MAX_ANNOUNCEMENTS_PER_GUILD",
    "max_templates": "MAX_TEMPLATES_PER_GUILD",
    "files_max_bytes": "GUILD_FILES_MAX_MB",
    "min_repeat_seconds": "MIN_REPEAT_MINUTES",
    "commands_per_minute": "COMMANDS_PER_MINUTE",
}
"""The setting that sets each of :class:`Limits`' fields for the whole instance."""


@dataclass(frozen=True, slots=True)
class GuildLimits:
    """What an operator set for one server in place of the instance's limits (None: the
    instance's)."""

    guild_id: int
    max_announcements: int | None = None
    max_templates: int | None = None
    files_max_bytes: float | None = None
    min_repeat_seconds: float | None = None
    commands_per_minute: int | None = None


@dataclass(frozen=True, slots=True)
class LeftGuild:
    """A server that removed the bot (or was deleted): when, and when it is forgotten."""

    guild_id: int
    left_at: float
    forget_at: float
    forget_job_id: int | None


@dataclass(frozen=True, slots=True)
class Image:
    """A file uploaded with every post, as downloaded when it was scheduled."""

    filename: str
    content_type: str | None
    data: bytes


@dataclass(frozen=True, slots=True)
class EmbedField:
    """One field of a post's embed (the dashboard edits them): a name over a value, side by
    side with its neighbours when ``inline``."""

    name: str
    value: str
    inline: bool = False


@dataclass(frozen=True, slots=True)
class LinkButton:
    """A link button under a post: its label and where it leads (``https://`` only)."""

    label: str
    url: str


@dataclass(frozen=True, slots=True)
class Style:
    """How a post looks beyond its text and title (``/style``, the dashboard): its embed's
    colour, footer, thumbnail, title link and fields, and its link buttons. The embed's parts
    need a title (the post is an embed only with one); the buttons go under any post."""

    color: int | None = None
    """The embed's colour as ``0xRRGGBB`` (None: crier's blurple)."""
    footer: str | None = None
    thumbnail: str | None = None
    """The name of the thumbnail's file (its bytes are kept in ``bot_thumbnails`` and
    uploaded with every post, like the files); None: no thumbnail."""
    url: str | None = None
    """Where the embed's title links to (``https://`` only)."""
    fields: tuple[EmbedField, ...] = ()
    buttons: tuple[LinkButton, ...] = ()

    @property
    def embedded(self) -> bool:
        """Whether it styles the embed (a colour, footer, thumbnail, link or field)."""
        return (
            self.color is not None
            or self.footer is not None
            or self.thumbnail is not None
            or self.url is not None
            or bool(self.fields)
        )

    @property
    def empty(self) -> bool:
        return not self.embedded and not self.buttons

    def texts(self) -> str:
        """Its texts that placeholders may fill in (the footer, the fields' names and
        values), run together: what a caller looks for a placeholder's name in."""
        parts = [self.footer or ""]
        for f in self.fields:
            parts += [f.name, f.value]
        return "\n".join(parts)


@dataclass(frozen=True, slots=True)
class Content:
    """What a post shows besides its text: an embed title, silence, where it goes."""

    title: str | None = None
    """Set: the post is an embed with this title and the message as its description."""
    silent: bool = False
    destination: Destination = Destination.TEXT
    publish: bool = False
    """Publish (crosspost) the post after it is posted (announcement channels only)."""
    tags: tuple[int, ...] = ()
    """A forum post's tags (ids)."""
    style: Style = Style()
    """Its embed's colour, footer, thumbnail, link and fields, and its link buttons."""


@dataclass(frozen=True, slots=True)
class PostAs:
    """Who an announcement's posts come from when not from the bot (``/edit as_name:
    as_avatar:``): posted through a webhook of their channel, under ``name`` and with
    ``avatar`` (None: Discord's default webhook avatar)."""

    name: str
    avatar: Image | None = None
    keep_avatar: bool = False
    """(An edit's draft) the avatar stored stays as it is; ``avatar`` is then None."""


KEPT: Final = "kept"
"""A draft's ``post_as`` that leaves who the announcement posts as as it is (a new one:
as the bot)."""


@dataclass(frozen=True, slots=True)
class EventSpec:
    """The Discord scheduled event each occurrence of an announcement gets: at ``location``
    (an EXTERNAL event) or in the voice or stage channel ``channel_id``, from the
    occurrence's time for ``minutes``."""

    minutes: int
    location: str | None = None
    channel_id: int | None = None


@dataclass(frozen=True, slots=True)
class Place:
    """Another place an announcement posts each of its occurrences in (``also_in``): a
    text or announcement channel, or a thread."""

    channel_id: int
    destination: Destination = Destination.TEXT


class PlaceState(StrEnum):
    """Where one occurrence's post in another place stands (``bot_place_deliveries``)."""

    QUEUED = "queued"
    """Planned with its job, when the occurrence began in its own channel."""
    SENDING = "sending"
    SENT = "sent"
    FAILED = "failed"
    SKIPPED = "skipped"
    """Not posted, on purpose (canceled meanwhile, the bot out of the server)."""


@dataclass(frozen=True, slots=True)
class PlaceDelivery:
    """One occurrence in another place, as recorded (what /info shows, what its jobs read)."""

    fire_ts: float
    channel_id: int
    state: PlaceState
    nonce: str
    first_attempt_at: float | None = None
    message_id: int | None = None
    sent_at: float | None = None
    error: str | None = None
    revision: int | None = None
    update_error: str | None = None
    late_by: float | None = None


def place_nonce(announcement_id: int, fire_ts: float, channel_id: int) -> str:
    """The nonce of an occurrence's post in another place (at most 25 characters), the same
    for every attempt at it, and not another place's."""
    key = f"{announcement_id}:{fire_ts!r}:{channel_id}"
    digest = hashlib.blake2b(key.encode(), digest_size=12)
    return "p" + digest.hexdigest()[:24]


@dataclass(frozen=True, slots=True)
class Tidy:
    """What becomes of an announcement's posts once they are up (``/edit pin: replace:
    delete_after:``)."""

    pin: bool = False
    """Pin each new post, and unpin the one before it."""
    replace: bool = False
    """Delete the post before once the new one is up."""
    delete_after: float | None = None
    """Delete each post this many seconds after it went up (None: never)."""

    @property
    def on(self) -> bool:
        """Any of it is asked for."""
        return self.pin or self.replace or self.delete_after is not None


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
    until: datetime | None = None
    """A recurring announcement posts nothing after this time."""
    rich: Content = Content()
    images: tuple[Image, ...] | None = ()
    """The files to upload with every post; None (an edit that leaves them): kept as they are."""
    event: EventSpec | None = None
    """A Discord scheduled event for each occurrence (None: none)."""
    reminder: float | None = None
    """How long before each occurrence the members who asked are reminded by DM, in
    seconds (None: reminders are off)."""
    times: int | None = None
    """A recurring announcement ends after this many posts (None: no such end)."""
    thumbnail: Image | None = None
    """A new thumbnail's bytes to keep (``rich.style.thumbnail`` names it); None: the
    thumbnail kept is left as it is (none at all when the style names none)."""
    post_as: PostAs | Literal["kept"] | None = KEPT
    """Who its posts come from: a name and avatar (through a webhook), None for the bot,
    or :data:`KEPT` (as it is; what any caller that does not know about it builds)."""
    places: tuple[Place, ...] = ()
    """The other places each occurrence is posted in (``also_in``)."""
    tidy: Tidy | None = None
    """What becomes of its posts once up (pin, replace, delete after); None: an edit that
    leaves that as it is, or a new one with none of it."""


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
    until_ts: float | None = None
    """A recurring announcement posts nothing after this time (then it is ``done``)."""
    revision: int = 1
    """Bumped by every change to what a post shows; a posted message records the one it shows."""
    repeat_nth: tuple[int, ...] = ()
    repeat_step: DateStep | None = None
    rich: Content = Content()
    repeat_skips: tuple[Skip, ...] = ()
    """The spans of local wall time a recurring one does not post in (``/skip``)."""
    times: int | None = None
    """A recurring announcement ends after this many posts (``/edit times:``; None: no
    such end)."""

    @property
    def rule(self) -> RepeatRule | None:
        """The repeat rule exactly as read at scheduling, with its skipped spans (None for a
        one-off)."""
        if self.repeat_kind is None:
            return None
        every = None if self.repeat_every is None else timedelta(seconds=self.repeat_every)
        return RepeatRule(
            repeat_kind(self.repeat_kind),
            self.repeat_cron,
            every,
            self.repeat_words or "",
            nth=self.repeat_nth,
            step=self.repeat_step,
            skips=self.repeat_skips,
        )

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


def nonce_for(announcement_id: int, fire_ts: float) -> str:
    """An occurrence's nonce (at most 25 characters), the same for every attempt at it."""
    digest = hashlib.blake2b(f"{announcement_id}:{fire_ts!r}".encode(), digest_size=12)
    return "c" + digest.hexdigest()[:24]


def reminder_nonce(announcement_id: int, fire_ts: float, user_id: int) -> str:
    """The nonce of the reminder of one occurrence to one member (at most 25 characters),
    the same for every attempt at it."""
    key = f"{announcement_id}:{fire_ts!r}:{user_id}"
    digest = hashlib.blake2b(key.encode(), digest_size=12)
    return "r" + digest.hexdigest()[:24]


@dataclass(frozen=True, slots=True)
class DeliveryRecord:
    """What is recorded of one occurrence's delivery so far."""

    state: DeliveryState
    message_id: int | None
    first_attempt_at: float
    nonce: str
    thread_id: int | None = None
    """A forum post's thread, once it is known to exist."""
    shown: Shown | None = None
    """What its first attempt showed (None: recorded before that was kept)."""


@dataclass(frozen=True, slots=True)
class Shown:
    """What the first attempt at an occurrence showed that is read rather than computed
    from the occurrence: every later attempt shows the same (its nonce re-send is the same
    request)."""

    locale: str | None
    """The language it was said in (None: English)."""
    event_id: int | None
    """The occurrence's Discord event it linked to (None: none)."""


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One change in an announcement's life."""

    at: float
    actor_id: int | None
    """The member who made it; None when the bot did (an ``until`` reached, a failure)."""
    action: HistoryAction
    detail: str


@dataclass(frozen=True, slots=True)
class PastDelivery:
    """One occurrence as recorded, for /info."""

    fire_ts: float
    state: DeliveryState
    message_id: int | None
    sent_at: float | None
    late_by: float | None
    error: str | None
    revision: int | None
    update_error: str | None
    publish_state: PublishState | None = None
    publish_error: str | None = None
    thread_id: int | None = None


INTERRUPTED_AND_STOPPED = (
    "may not have been delivered: an attempt was interrupted and the announcement was {state} "
    "before it could be sent again"
)
"""Why an occurrence whose attempt a crash or a stop interrupted ends failed when its
announcement was canceled, paused or ended before the attempt could be retried."""


@dataclass(frozen=True, slots=True)
class DashboardSession:
    """A login to the web dashboard (``bot.web.dashboard``), found by its id's hash."""

    id_hash: str
    user_id: int
    username: str
    guild_ids: frozenset[int]
    """The servers the user was in when they logged in (read from Discord then)."""
    csrf_token: str
    flash: str | None
    expires_at: float


@dataclass(frozen=True, slots=True)
class Template:
    """What a server saved to start announcements from (``/template save``): each field is a
    default of ``/schedule template:``, which any option overrides."""

    guild_id: int
    name: str
    content: str
    title: str | None = None
    silent: bool = False
    mention: str | None = None
    """``everyone``, ``here`` or ``role:<id>``: re-checked against the member's rights when
    it is used, never trusted from the template."""
    channel_id: int | None = None
    image: Image | None = None
    author_id: int = 0
    created_at: float = 0.0
    reminder: float | None = None
    """How long before each post the members who ask are reminded by DM (None: off)."""
    post_as: PostAs | None = None
    """Who its posts come from (``/edit as_name: as_avatar:``; None: the bot)."""
    style: Style = Style()
    """Its style (``/style``), applied as it is by ``/schedule template:``."""
    thumbnail: Image | None = None
    """Its style's thumbnail, bytes included (None: none)."""
    also_in: tuple[int, ...] = ()
    """The other places it posts in (channels' ids; ``/schedule template:`` checks them)."""
    tidy: Tidy = Tidy()
    """What becomes of its posts (pin, replace, delete after), applied as it is."""
