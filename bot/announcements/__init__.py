"""Announcements: the bot's domain layer over the scheduler, with no Discord code and no SQL.

An announcement row and the job (one-off) or schedule (recurring) that delivers it are
written in one transaction. Every id a user sees is the per-guild ``local_id``; every lookup
is by ``(guild_id, local_id)``, so another guild's id is simply "not found". The rows are read
and written through :class:`bot.db.BotDb`, on the scheduler's own connection.

:class:`Announcements` is put together from one part per module: ``lifecycle`` (create,
cancel), ``reading`` (get, listing, /info, choices, next times), ``pausing`` (pause, resume,
until), ``skipping`` (/skip, /unskip: exceptions to a rule), ``editing`` (/edit),
``templates`` (/template), ``transfer`` (export and import), ``standing`` (servers left and
back, forgotten; command counts), ``reminders`` (reminders by DM: who asked, what is due),
``post_as`` (who its posts come from: a name and avatar, through a webhook), ``calendar``
(the calendar feed: its address, what it lists), ``guards`` (the limits, checked) and
``service`` (what they share: the scheduler, the
limits, guild and member settings); ``jobs`` names the scheduler jobs they enqueue (and
types their arguments), ``deliveries`` is the bookkeeping those jobs record.
"""

from __future__ import annotations

from ..db.listing import ListFilter
from ..models import (
    LIVE_STATES,
    Announcement,
    AnnouncementState,
    Draft,
    GuildSettings,
    mention_markup,
)
from .calendar import (
    FEED_DAYS,
    FEED_EVENTS,
    FEED_PER_ANNOUNCEMENT,
    CalendarAddress,
    Calendars,
    Feed,
    FeedEvent,
    feed_path,
)
from .course import NotFound, NotPossible, Skipped, Why
from .editing import (
    MOVED,
    EditOutcome,
    NotEditable,
    PostedUpdate,
    being_posted,
    check_editable,
)
from .events import EventPlan, EventPlans, EventShape, sync_events_later
from .extra_posts import ExtraPosts, PostNow, extra_nonce, next_post_time
from .guards import (
    DEFAULT,
    LIMIT_OPTIONS,
    BadLimit,
    LimitOption,
    OverLimit,
    TooManyCommands,
    TooMuchStored,
    changed_limits,
    check_files,
    check_repeat,
    check_room,
    check_templates,
    limit_lines,
)
from .jobs import (
    EVENTS_FN,
    OLD_NAMES,
    POSTNOW_FN,
    PUBLISH_FN,
    REMIND_FN,
    REPORT_FN,
    REPORTS_FN,
    SEND_FN,
    TIDY_FN,
    UPDATE_FN,
    EventsArgs,
    PostNowArgs,
    PublishArgs,
    RemindArgs,
    ReportArgs,
    ReportDigest,
    SendArgs,
    TidyArgs,
    UpdateArgs,
    channel_pace,
    delivery_job,
    enqueue_delivery,
    enqueue_post_update,
    enqueue_publish,
    enqueue_report,
    publish_pace,
    schedule_name,
)
from .pausing import Pausing
from .placeholders import as_posted_at
from .places import PLACE_SEND_FN, PLACE_UPDATE_FN, PlaceArgs, Places
from .post_as import PostingAs, post_as_words
from .previous import MAX_DELETE_AFTER, MIN_DELETE_AFTER, PostCare
from .reading import (
    CHOICES_SCANNED,
    INFO_DELIVERIES,
    INFO_HISTORY,
    INFO_TIMES,
    Details,
    IdChoices,
    Listing,
    ListingPage,
    ReminderInfo,
    as_edited,
)
from .reminders import (
    MAX_REMINDER,
    MIN_REMINDER,
    Due,
    ReminderOff,
    ReminderPlan,
    Reminders,
    Subscribed,
    remind_later,
)
from .skipping import Skipping
from .standing import AWAY, FORGET_FN, ForgetArgs, Standing
from .templates import MAX_TEMPLATE_NAME, TemplateRefused, Templates, check_template_name
from .transfer import PENDING_FOR, ExportRows, ImportConflict, ImportDone, ImportRow, Transfer

__all__ = [
    "AWAY",
    "CHOICES_SCANNED",
    "DEFAULT",
    "EVENTS_FN",
    "FEED_DAYS",
    "FEED_EVENTS",
    "FEED_PER_ANNOUNCEMENT",
    "FORGET_FN",
    "INFO_DELIVERIES",
    "INFO_HISTORY",
    "INFO_TIMES",
    "LIMIT_OPTIONS",
    "LIVE_STATES",
    "MAX_DELETE_AFTER",
    "MAX_REMINDER",
    "MAX_TEMPLATE_NAME",
    "MIN_DELETE_AFTER",
    "MIN_REMINDER",
    "MOVED",
    "OLD_NAMES",
    "PENDING_FOR",
    "PLACE_SEND_FN",
    "PLACE_UPDATE_FN",
    "POSTNOW_FN",
    "PUBLISH_FN",
    "REMIND_FN",
    "REPORTS_FN",
    "REPORT_FN",
    "SEND_FN",
    "TIDY_FN",
    "UPDATE_FN",
    "Announcement",
    "AnnouncementState",
    "Announcements",
    "BadLimit",
    "CalendarAddress",
    "Calendars",
    "Details",
    "Draft",
    "Due",
    "EditOutcome",
    "EventPlan",
    "EventPlans",
    "EventShape",
    "EventsArgs",
    "ExportRows",
    "ExtraPosts",
    "Feed",
    "FeedEvent",
    "ForgetArgs",
    "GuildSettings",
    "IdChoices",
    "ImportConflict",
    "ImportDone",
    "ImportRow",
    "LimitOption",
    "ListFilter",
    "Listing",
    "ListingPage",
    "NotEditable",
    "NotFound",
    "NotPossible",
    "OverLimit",
    "PlaceArgs",
    "Places",
    "PostCare",
    "PostNow",
    "PostNowArgs",
    "PostedUpdate",
    "PostingAs",
    "PublishArgs",
    "RemindArgs",
    "ReminderInfo",
    "ReminderOff",
    "ReminderPlan",
    "Reminders",
    "ReportArgs",
    "ReportDigest",
    "SendArgs",
    "Skipped",
    "Standing",
    "Subscribed",
    "TemplateRefused",
    "Templates",
    "TidyArgs",
    "TooManyCommands",
    "TooMuchStored",
    "Transfer",
    "UpdateArgs",
    "Why",
    "as_edited",
    "as_posted_at",
    "being_posted",
    "changed_limits",
    "channel_pace",
    "check_editable",
    "check_files",
    "check_repeat",
    "check_room",
    "check_template_name",
    "check_templates",
    "delivery_job",
    "enqueue_delivery",
    "enqueue_post_update",
    "enqueue_publish",
    "enqueue_report",
    "extra_nonce",
    "feed_path",
    "limit_lines",
    "mention_markup",
    "next_post_time",
    "post_as_words",
    "publish_pace",
    "remind_later",
    "schedule_name",
    "sync_events_later",
]


class Announcements(
    Transfer,
    Pausing,
    Skipping,
    Standing,
    EventPlans,
    Reminders,
    ExtraPosts,
    PostingAs,
    Calendars,
    Places,
    PostCare,
):
    """Create, list and cancel announcements, keep guild settings, limits and templates,
    and follow the servers the bot leaves and comes back to."""
