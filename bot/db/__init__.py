"""The bot's data layer: every SQL statement on the bot's tables, behind named methods.

:class:`BotDb` wraps a connection the scheduler hands out, ``ctx.db`` inside
``sched.transaction()`` / ``ctx.run_mutation`` or the one ``sched.reader()`` yields, so the
bot's writes commit or roll back together with the scheduler's (a delivery's bookkeeping and
its job's outcome, an announcement and its job or schedule): that shared transaction is what
the exactly-once guarantee rests on. Statements use ``?`` placeholders (the ``Db`` protocol
translates them for PostgreSQL) and rows are read by column name. No rules live here: what a
state means is decided in :mod:`bot.announcements` and :mod:`bot.posting.delivery`.

One module per table (or close group of tables), each a :class:`~bot.db.table.Table` whose
methods :class:`BotDb` puts together: ``announcements``, ``listing`` (the pages of /list and
of an ``id`` option), ``occurrences`` (a schedule's coming occurrence, on the scheduler's
tables), ``deliveries`` (with the history), ``attachments``, ``settings``
(guild, member and ``bot_meta``), ``dashboard``, ``templates`` (with the keys of imported
announcements), ``events`` (Discord's scheduled events), ``reminders`` (reminders by DM),
``styles`` (a post's style as stored, and its thumbnail), ``extra_posts`` (``/postnow``'s
posts), ``webhooks`` (who an announcement posts as, the webhook of each channel, the intent
of each post through one), ``calendar`` (the calendar feed's address), ``guilds`` (servers
left, per-server limits, command counts, forgetting a server), ``retention`` (what
``HISTORY_DAYS`` deletes), ``posts`` (the previous post: pins, replacing, deleting) and
``places`` (the other places an announcement posts in, and
each occurrence's post there).
"""

from .announcements import decode_nth, decode_step, encode_nth, encode_step
from .attachments import AttachmentTable
from .calendar import CalendarTable
from .dashboard import DashboardSessionTable
from .deliveries import DeliveryTable
from .events import EventRow, EventTable
from .extra_posts import ExtraPost, ExtraPostTable
from .guilds import ENDED_STATES, GuildTables
from .listing import ListingReads
from .occurrences import OccurrenceReads
from .places import PlaceTable
from .posts import PostRow, PostTables
from .reminders import ReminderCounts, ReminderRow, ReminderTable, Subscriber
from .retention import RetentionTable, Walked
from .settings import SettingsTables
from .styles import ThumbnailTable, decode_style, encode_style
from .templates import PendingImport, TemplateTable
from .webhooks import ChannelWebhook, WebhookPost, WebhookTable

__all__ = [
    "ENDED_STATES",
    "BotDb",
    "ChannelWebhook",
    "EventRow",
    "ExtraPost",
    "PendingImport",
    "PostRow",
    "ReminderCounts",
    "ReminderRow",
    "Subscriber",
    "Walked",
    "WebhookPost",
    "decode_nth",
    "decode_step",
    "decode_style",
    "encode_nth",
    "encode_step",
    "encode_style",
]


class BotDb(
    ListingReads,
    OccurrenceReads,
    DeliveryTable,
    AttachmentTable,
    SettingsTables,
    DashboardSessionTable,
    TemplateTable,
    GuildTables,
    EventTable,
    ReminderTable,
    ThumbnailTable,
    ExtraPostTable,
    RetentionTable,
    WebhookTable,
    CalendarTable,
    PlaceTable,
    PostTables,
):
    """The bot's tables, read and written on one connection of the scheduler's store."""

    __slots__ = ()
