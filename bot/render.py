"""What the bot says: confirmations, list pages, labels, and the answer to every error (the
commands and the dashboard answer from here alike). Pure text, no Discord calls."""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from scheduler.stores.sqlite import refused_write

from .announcements import (
    FEED_DAYS,
    Announcement,
    CalendarAddress,
    Details,
    EditOutcome,
    ImportConflict,
    ImportDone,
    Listing,
    NotEditable,
    NotFound,
    NotPossible,
    OverLimit,
    PostedUpdate,
    PostNow,
    ReminderInfo,
    ReminderOff,
    Skipped,
    Subscribed,
    TemplateRefused,
    Why,
)
from .announcements.calendar import feed_path
from .announcements.course import COUNTED
from .announcements.diff import Field
from .announcements.placeholders import as_posted_at
from .i18n import catalogs, current_locale, short_time, t, tn
from .limits import MAX_CHOICE_NAME, MAX_MESSAGE
from .models import (
    AnnouncementState,
    DeliveryState,
    Destination,
    EventSpec,
    HistoryAction,
    HistoryEntry,
    PastDelivery,
    PlaceDelivery,
    PlaceState,
    PublishState,
    Style,
    Template,
    Tidy,
    mention_markup,
)
from .parsing import InputError, discord_timestamp
from .parsing.placeholders import EVENT_LINK
from .parsing.skips import MAX_SKIPS, Skip
from .parsing.spoken import duration, spoken_rule
from .posting.reasons import said_reason
from .requests.checks import Refusal
from .requests.export_doc import DocumentRefused
from .requests.style import color_words

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    from .requests.importing import ImportPlan, RowOutcome

log = logging.getLogger(__name__)

PAGE_SIZE = 6
PREVIEW_LIMIT = 1000
HIDDEN = "(in a channel you can't see)"
"""Shown instead of the text of an announcement for a channel the reader can't view."""


def hidden_words() -> str:
    """:data:`HIDDEN` in the reader's language."""
    return t("(in a channel you can't see)")


def state_word(state: str) -> str:
    """An announcement's state, as /list and /info say it."""
    words = {
        AnnouncementState.SCHEDULED: t("scheduled"),
        AnnouncementState.SENT: t("sent"),
        AnnouncementState.FAILED: t("failed"),
        AnnouncementState.PAUSED: t("paused"),
        AnnouncementState.CANCELED: t("canceled"),
        AnnouncementState.DONE: t("done"),
    }
    return str(words.get(state, state))  # type: ignore[call-overload]


def repeat_text(a: Announcement, none: str | None = None) -> str:
    """How ``a`` repeats, in the reader's language (said from its rule: the stored words are
    English), or ``none`` (else "no (posted once)") for a one-off."""
    rule = a.rule
    if rule is None:
        return none if none is not None else t("no (posted once)")
    if current_locale() not in catalogs():
        return a.repeat_words or spoken_rule(rule, a.timezone)
    return spoken_rule(rule, a.timezone)


def when(dt: datetime | None) -> str:
    if dt is None:
        return "—"
    return f"{discord_timestamp(dt, 'F')} ({discord_timestamp(dt, 'R')})"


def preview(text: str, limit: int = PREVIEW_LIMIT) -> str:
    """The message as a block quote, cut at ``limit`` characters."""
    shown = text if len(text) <= limit else text[:limit]
    quoted = "\n".join("> " + line if line else ">" for line in shown.split("\n"))
    if len(text) > limit:
        more = tn("…and {n} more character", "…and {n} more characters", len(text) - limit)
        quoted += f"\n*{more}*"
    return quoted


def confirmation(
    a: Announcement, first: datetime, notes: list[str], upcoming: Sequence[datetime] = ()
) -> str:
    """What /schedule answers: the first time, the rule in words and, for a repeating
    announcement, its first posts (``upcoming``, the first included), the pings, notes; the
    preview is the first post (its placeholders rendered)."""
    repeat = repeat_text(a)
    lines = [
        t("✅ Scheduled announcement **#{id}** in {channel}.", id=a.local_id,
          channel=f"<#{a.channel_id}>"),
        t("**First:** {when}", when=when(first)),
        t("**Repeats:** {repeat}", repeat=repeat),
    ]  # fmt: skip
    if a.until_ts is not None:
        until = when(datetime.fromtimestamp(a.until_ts, UTC))
        lines.append(t("**Until:** {when}, then it ends", when=until))
    if a.recurring and len(upcoming) > 1:
        times = ", ".join(discord_timestamp(u, "F") for u in upcoming)
        lines.append(t("**Next:** {when}", when=times))
    lines.append(t("**Pings:** {pings}", pings=_pings(a)))
    lines += content_lines(a)
    lines += [f"ℹ️ {n}" for n in notes]
    lines += [t("**Preview:**")]
    shown = as_posted_at(a, first.timestamp())
    if shown.rich.title is not None:
        lines.append(f"> **{_cut(shown.rich.title, 256)}**")
    lines.append(preview(shown.text))
    return "\n".join(lines)


def _where(destination: Destination) -> str | None:
    return {
        Destination.ANNOUNCEMENT: t("an announcement channel"),
        Destination.THREAD: t("a thread (an archived one is reopened by the post)"),
        Destination.FORUM: t("a forum: each time a new post"),
    }.get(destination)


def content_lines(a: Announcement, files: Sequence[str] = ()) -> list[str]:
    """What the post is besides its text: where it goes, embed, files, silence, publishing."""
    rich = a.rich
    lines = []
    where = _where(rich.destination)
    if where is not None:
        lines.append(t("**Posts in:** {where}", where=where))
    if rich.title is not None:
        lines.append(t("**Embed title:** {title}", title=rich.title))
    if files:
        lines.append(t("**Files:** {files}", files=", ".join(f"`{name}`" for name in files)))
    if rich.tags:
        lines.append(t("**Tags:** {tags}", tags=", ".join(str(tag) for tag in rich.tags)))
    if rich.silent:
        lines.append(t("**Silent:** yes (@silent: no push notification)"))
    if rich.destination == Destination.ANNOUNCEMENT:
        published = t("yes") if rich.publish else t("no")
        lines.append(t("**Published to followers:** {yes_or_no}", yes_or_no=published))
    return lines + style_lines(rich.style)


def style_lines(style: Style) -> list[str]:
    """Its style, a line a part: colour, footer, thumbnail, title link, fields, buttons."""
    lines = []
    if style.color is not None:
        lines.append(t("**Colour:** {color}", color=f"`{color_words(style.color)}`"))
    if style.footer is not None:
        lines.append(t("**Footer:** {footer}", footer=_cut(style.footer, 100)))
    if style.thumbnail is not None:
        lines.append(t("**Thumbnail:** {file}", file=f"`{style.thumbnail}`"))
    if style.url is not None:
        lines.append(t("**Title link:** {url}", url=f"<{style.url}>"))
    if style.fields:
        names = ", ".join(_cut(f.name, 40) for f in style.fields)
        lines.append(
            t("**Embed fields:** {count} ({names})", count=len(style.fields),
              names=_cut(names, 200))
        )  # fmt: skip
    if style.buttons:
        said = ", ".join(f"{b.label} (<{b.url}>)" for b in style.buttons)
        lines.append(t("**Link buttons:** {buttons}", buttons=said))
    return lines


def style_answer(a: Announcement) -> str:
    """``/style id:`` with no other option: the announcement's style, or how to give one."""
    lines = style_lines(a.rich.style)
    if not lines:
        return t(
            "Announcement **#{id}** has no style yet. For example: `/style id: {id} color: "
            "#5865F2 footer: See you there buttons: Tickets | https://example.org/t`.",
            id=a.local_id,
        )  # fmt: skip
    head = t("🎨 The style of announcement **#{id}**:", id=a.local_id)
    return "\n".join([head, *lines])


def event_said(spec: EventSpec | None) -> str:
    """The Discord event each occurrence gets, in words: ``Town hall, 90 min``, or none."""
    if spec is None:
        return t("none")
    return t("{where}, {minutes} min", where=_event_place(spec), minutes=spec.minutes)


def _event_place(spec: EventSpec) -> str:
    return f"<#{spec.channel_id}>" if spec.channel_id is not None else spec.location or ""


def event_lines(details: Details) -> list[str]:
    """The Discord event each occurrence gets, and the coming ones made (with their links)."""
    spec = details.event
    if spec is None:
        return []
    lines = [
        t("**Discord event:** {where}, {minutes} min, for each occurrence",
          where=_event_place(spec), minutes=spec.minutes)
    ]  # fmt: skip
    for e in details.events[:INFO_EVENTS]:
        at = discord_timestamp(e.fire_ts, "f")
        if e.state == "created" and e.event_id is not None:
            link = EVENT_LINK.format(guild_id=details.announcement.guild_id, event_id=e.event_id)
            lines.append(f"• {at} — {link}")
        elif e.state == "failed":
            why = said_reason(e.error) if e.error else t("refused")
            lines.append(f"• {at} — ⚠️ " + t("not created: {error}", error=_cut(why)))
        else:
            lines.append(f"• {at} — " + t("being created"))
    return lines


INFO_EVENTS = 3
"""The coming events /info lists."""


def _pings(a: Announcement) -> str:
    allowed = a.allowed_mentions
    parts = []
    if a.mention is not None:
        parts.append(mention_markup(a.mention))
    if allowed.get("everyone") and a.mention not in ("everyone", "here"):
        parts.append(t("@everyone/@here in the text"))
    extra = [r for r in allowed.get("roles", []) if a.mention != f"role:{r}"]
    parts += [f"<@&{r}>" for r in extra]
    return ", ".join(parts) if parts else t("no role or @everyone pings")


STATE_ICON = {
    AnnouncementState.SCHEDULED: "🕒",
    AnnouncementState.SENT: "✅",
    AnnouncementState.FAILED: "❌",
    AnnouncementState.PAUSED: "⏸️",
    AnnouncementState.CANCELED: "🚫",
    AnnouncementState.DONE: "🏁",
}
_SHOWS_FAILURE = (AnnouncementState.FAILED, AnnouncementState.PAUSED, AnnouncementState.SCHEDULED)
"""States in which the reason the last occurrence failed is still worth showing."""


def listing_page(listing: Listing, page: int, guild_id: int, hidden: Collection[int] = ()) -> str:
    """A /list page; the text of announcements for the channels in ``hidden`` isn't shown."""
    pages = max(1, -(-listing.total // PAGE_SIZE))
    if not listing.items:
        return t("No announcements yet. Create one with `/schedule`.")
    out = [
        t("**Announcements** — page {page} of {pages} ({total} in all)", page=page + 1,
          pages=pages, total=listing.total)
    ]  # fmt: skip
    for a in listing.items:
        icon = STATE_ICON.get(a.state, "•")
        head = t(
            "{icon} **#{id}** in {channel} · {state} · by {author}", icon=icon, id=a.local_id,
            channel=f"<#{a.channel_id}>", state=state_word(a.state), author=f"<@{a.author_id}>",
        )  # fmt: skip
        lines = [head]
        nxt = listing.next_fires.get(a.id)
        if a.state == AnnouncementState.SCHEDULED:
            lines.append("  " + t("next: {when}", when=when(nxt)))
        elif a.state == AnnouncementState.PAUSED:
            lines.append("  " + t("paused: nothing posts until `/resume id:{id}`", id=a.local_id))
        elif a.state == AnnouncementState.DONE:
            lines.append("  " + t("ended: its `until` was reached; it posts nothing more"))
        lines.append("  " + t("repeats: {repeat}", repeat=repeat_text(a, t("no"))))
        if a.until_ts is not None and a.state in (
            AnnouncementState.SCHEDULED,
            AnnouncementState.PAUSED,
        ):
            until = when(datetime.fromtimestamp(a.until_ts, UTC))
            lines.append("  " + t("until: {when}", when=until))
        if a.times is not None and a.live:
            lines.append("  " + tn("ends after {n} post", "ends after {n} posts", a.times))
        if a.id in listing.skips:
            lines.append("  " + t("skips: {dates}", dates=skips_words(listing.skips[a.id])))
        if a.last_message_id is not None:
            link = post_link(guild_id, a, a.last_message_id)
            lines.append("  " + t("posted: {link}", link=link))
        if a.id in listing.published:
            lines.append(f"  {publish_words(*listing.published[a.id])}")
        if a.failure and a.state in _SHOWS_FAILURE:
            lines.append(f"  ⚠️ {said_reason(a.failure)}")
        shown = f"`{hidden_words()}`" if a.channel_id in hidden else _snippet(a.text)
        lines.append(f"  {shown}")
        out.append("\n".join(lines))
    text = "\n".join(out)
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 10] + "…"


def post_link(guild_id: int, a: Announcement, message_id: int) -> str:
    """A link to a post (a forum post's is its thread's)."""
    if a.rich.destination == Destination.FORUM:
        return f"https://discord.com/channels/{guild_id}/{message_id}"
    return f"https://discord.com/channels/{guild_id}/{a.channel_id}/{message_id}"


def publish_words(state: PublishState, error: str | None) -> str:
    """How publishing a post ended, in /list's and /info's words."""
    if state == PublishState.FAILED:
        return t("not published: {error}", error=error)
    return {
        PublishState.PENDING: t("publishing (waiting for the channel's publish limit)"),
        PublishState.PUBLISHED: t("published"),
        PublishState.PUBLISHED_LATE: t("published late"),
    }[state]


def _snippet(text: str, width: int = 80) -> str:
    flat = " ".join(text.split())
    flat = flat if len(flat) <= width else flat[: width - 1] + "…"
    return f"`{flat.replace('`', 'ˋ')}`" if flat else "`" + t("(empty)") + "`"


def choice_label(a: Announcement, nxt: datetime | None, hidden: bool = False) -> str:
    """An autocomplete label (at most ``MAX_CHOICE_NAME`` characters); ``hidden``: without
    the text."""
    when_text = short_time(nxt) if nxt else state_word(a.state)
    flat = hidden_words() if hidden else " ".join(a.content.split())
    label = f"#{a.local_id} · {when_text} · {flat}"
    return label if len(label) <= MAX_CHOICE_NAME else label[: MAX_CHOICE_NAME - 1] + "…"


def not_possible(error: NotPossible) -> str:
    """Why a change can't be made, and what to do instead (nothing was changed)."""
    a = error.announcement
    n = "?" if a is None else a.local_id
    at = "—" if error.at is None else when(error.at)
    failure = said_reason(a.failure) if a and a.failure else t("see `/list`")
    why = error.why
    if why == Why.SENT:
        text = t("Announcement #{id} was already posted; there is nothing left to change.", id=n)
    elif why == Why.CANCELED:
        text = t("Announcement #{id} was canceled. Schedule a new one with `/schedule`.", id=n)
    elif why == Why.FAILED:
        text = t(
            "Announcement #{id} failed ({failure}). Schedule it again with `/schedule`.",
            id=n, failure=failure,
        )  # fmt: skip
    elif why == Why.DONE:
        text = t(
            "Announcement #{id} has ended: its `until` was reached. Schedule a new one with "
            "`/schedule`.", id=n,
        )  # fmt: skip
    elif why == Why.ALREADY_PAUSED:
        text = t(
            "Announcement #{id} is already paused. Use `/resume id:{id}` to post it again.", id=n
        )
    elif why == Why.NOT_PAUSED:
        text = t("Announcement #{id} isn't paused; there is nothing to resume.", id=n)
    elif why == Why.TIME_PASSED:
        text = t(
            "Announcement #{id}'s time, {when}, passed while it was paused, so it can't just "
            "resume. Give it a new time with `/edit id:{id} when:…` (it stays paused until "
            "then).", id=n, when=at,
        )  # fmt: skip
    elif why == Why.ONE_OFF:
        text = t(
            "Announcement #{id} posts only once, so there is no next occurrence to skip. "
            "Use `/cancel id:{id}` to stop it, or `/pause id:{id}`.", id=n,
        )  # fmt: skip
    elif why == Why.PAUSED:
        text = t(
            "Announcement #{id} is paused: nothing posts until you `/resume id:{id}` it. "
            "Resume it first, then skip.", id=n,
        )  # fmt: skip
    elif why == Why.NOTHING_LEFT:
        text = t(
            "Announcement #{id} has nothing left to post before its `until` ({when}). Give "
            "it a later one with `/edit id:{id} until:…`, or `/cancel` it.", id=n, when=at,
        )  # fmt: skip
    elif why == Why.UNTIL_ONE_OFF:
        text = t(
            "Announcement #{id} posts only once; `until` is for repeating announcements.", id=n
        )
    elif why == Why.NOT_SCHEDULED:
        text = t(
            "Announcement #{id} is paused, so it has no next post. `/resume id:{id}` it first.",
            id=n,
        )
    elif why == Why.NOTHING_NEXT:
        text = t("Announcement #{id} has no next post: it has posted its last.", id=n)
    elif why in _SKIP_WHYS:
        text = _skip_not_possible(error, n, at)
    else:
        text = t(
            "Its first time would be {when}, after `until`: nothing would ever be posted. "
            "Pick a later `until`.", when=at,
        )  # fmt: skip
    return text + " " + t("Nothing was changed.")


_SKIP_WHYS = frozenset(
    {Why.NO_OCCURRENCE, Why.ALREADY_SKIPPED, Why.NOT_SKIPPED, Why.TOO_MANY_SKIPS,
     Why.BEING_POSTED, Why.TIMES_ONE_OFF}
)  # fmt: skip


def _skip_not_possible(error: NotPossible, n: int | str, at: str) -> str:
    why = error.why
    if why == Why.NO_OCCURRENCE:
        return t(
            "Announcement #{id} doesn't post then (nothing to skip). Its first time after "
            "that is {when}; `/info id:{id}` lists its next times.", id=n, when=at,
        )  # fmt: skip
    if why == Why.ALREADY_SKIPPED:
        return t("Announcement #{id} is already skipped then.", id=n)
    if why == Why.NOT_SKIPPED:
        return t(
            "Announcement #{id} has nothing skipped then; `/info id:{id}` shows what is.", id=n
        )
    if why == Why.TOO_MANY_SKIPS:
        return t(
            "Announcement #{id} already has {most} skipped dates: take some back with "
            "`/unskip`, or skip a range with `from` and `to`.", id=n, most=MAX_SKIPS,
        )  # fmt: skip
    if why == Why.BEING_POSTED:
        return t("Announcement #{id} is being posted right now ({when}); it can't be skipped.",
                 id=n, when=at)  # fmt: skip
    return t("Announcement #{id} posts only once; `times` is for repeating announcements.", id=n)


def paused(a: Announcement) -> str:
    channel = f"<#{a.channel_id}>"
    if a.recurring:
        return t(
            "⏸️ Paused announcement **#{id}** for {channel}. Its schedule is stopped until you "
            "`/resume id:{id}` it.", id=a.local_id, channel=channel,
        )  # fmt: skip
    return t(
        "⏸️ Paused announcement **#{id}** for {channel}. It will not be posted until you "
        "`/resume id:{id}` it.", id=a.local_id, channel=channel,
    )  # fmt: skip


def resumed(a: Announcement, nxt: datetime | None) -> str:
    lines = [
        t("▶️ Resumed announcement **#{id}** for {channel}.", id=a.local_id,
          channel=f"<#{a.channel_id}>")
    ]  # fmt: skip
    lines.append(t("**Next:** {when}", when=when(nxt)))
    if a.recurring:
        lines.append(t("Times that passed while it was paused are not posted."))
    if a.failure:
        lines.append(
            t("The failure that paused it is cleared ({failure}).", failure=said_reason(a.failure))
        )
    return "\n".join(lines)


def skipped(s: Skipped) -> str:
    """The /skip answer: what was skipped (the first occurrence, how many), and what comes
    next."""
    a = s.announcement
    if s.span is None or s.count == 1:
        first = t("⏭️ Skipping announcement **#{id}** at {when}: it won't be posted then.",
                  id=a.local_id, when=when(s.skipped))  # fmt: skip
    else:
        first = tn(
            "⏭️ Skipping announcement **#{id}** on {span}: {count} occurrence won't be posted "
            "(from {when}).",
            "⏭️ Skipping announcement **#{id}** on {span}: {count} occurrences won't be posted "
            "(from {when}).",
            s.count, id=a.local_id, span=s.span.words(), count=_counted(s.count),
            when=when(s.skipped),
        )  # fmt: skip
    lines = [
        first,
        t("**Next after that:** {when}", when=when(s.then))
        if s.then is not None
        else t("That was the last one before its `until`: it then ends."),
    ]
    if s.span is not None:
        lines.append(t("Take it back with `/unskip id:{id} date:…`.", id=a.local_id))
    return "\n".join(lines)


def calendar_answer(base: str, found: CalendarAddress, *, public: bool) -> str:
    """The /calendar answer: the feed's address (at ``base``: the web server's; ``public``:
    its ``DASHBOARD_PUBLIC_URL``), how to use it, and who can read it."""
    url = base + feed_path(found.token)
    if found.replaced:
        lines = [
            t("🔁 A new calendar address for this server: {url}", url=url),
            t("The old address no longer works: calendars subscribed to it must subscribe "
              "to this one."),
        ]  # fmt: skip
    else:
        lines = [t("📅 This server's calendar: {url}", url=url)]
    lines += [
        t("Subscribe to it by its address in a calendar app (don't import the file: a "
          "subscription follows every change). It lists the scheduled announcements of the "
          "next {days} days, skipped dates left out.", days=FEED_DAYS),
        t("🔒 Anyone with this address sees every scheduled announcement of this server, "
          "in every channel: share it with care. `/calendar reset: true` makes a new one and "
          "this one stops working."),
    ]  # fmt: skip
    if not public:
        lines.append(
            t("⚠️ This is the address the bot listens on: its operator has not set "
              "`DASHBOARD_PUBLIC_URL` (the address people reach it at), so it may not be "
              "reachable from elsewhere.")
        )  # fmt: skip
    return "\n".join(lines)


def no_calendar() -> str:
    """The /calendar answer when the bot serves no web pages (nothing is made)."""
    return t(
        "This bot serves no web pages, so it has no calendar address to give. Its operator "
        "can set `HTTP_ADDRESS` (and `DASHBOARD_PUBLIC_URL`, the address people reach it at) "
        "to serve one."
    )


def unskipped(s: Skipped) -> str:
    """The /unskip answer: which occurrences post again, and what comes next."""
    a = s.announcement
    span = "?" if s.span is None else s.span.words()
    if s.count:
        head = tn(
            "↩️ Announcement **#{id}** posts again on {span}: {count} occurrence is no longer "
            "skipped (from {when}).",
            "↩️ Announcement **#{id}** posts again on {span}: {count} occurrences are no longer "
            "skipped (from {when}).",
            s.count, id=a.local_id, span=span, count=_counted(s.count), when=when(s.skipped),
        )  # fmt: skip
    else:
        head = t("↩️ The skip of announcement **#{id}** on {span} is taken back.",
                 id=a.local_id, span=span)  # fmt: skip
    return "\n".join([head, t("**Next:** {when}", when=when(s.then))])


def _counted(count: int) -> str:
    return f"{COUNTED}+" if count > COUNTED else str(count)


def _field_name(field: Field) -> str:
    return {
        Field.MENTION: t("Pings"),
        Field.CHANNEL: t("Channel"),
        Field.WHEN: t("When"),
        Field.REPEAT: t("Repeats"),
        Field.TIMEZONE: t("Time zone"),
        Field.UNTIL: t("Until"),
        Field.TITLE: t("Embed title"),
        Field.SILENT: t("Silent"),
        Field.TAGS: t("Tags"),
        Field.PUBLISH: t("Published to followers"),
        Field.EVENT: t("Discord event"),
        Field.REMINDER: t("Reminders"),
        Field.TIMES: t("Ends after (posts)"),
        Field.COLOR: t("Colour"),
        Field.THUMBNAIL: t("Thumbnail"),
        Field.URL: t("Title link"),
        Field.FIELDS: t("Embed fields"),
        Field.BUTTONS: t("Link buttons"),
        Field.AS_NAME: t("Posts as"),
        Field.ALSO_IN: t("Also in"),
        Field.PIN: t("Pin each post"),
        Field.REPLACE: t("Replace the previous post"),
        Field.DELETE_AFTER: t("Delete each post after"),
    }.get(field, str(field))


def _posted_note(posted: PostedUpdate | None, link: str) -> str | None:
    if posted == PostedUpdate.QUEUED:
        return t("✏️ The posted message {link} is being edited in place.", link=link)
    if posted == PostedUpdate.LEFT:
        return t("The posted message {link} is left as it was (`update_posted: false`).", link=link)
    if posted == PostedUpdate.AFTER_SEND:
        return t("It is being posted right now; the posted message will show the new text.")
    if posted == PostedUpdate.UNAVAILABLE:
        return t(
            "The posted message {link} can't be updated (deleted, or the announcement moved "
            "to another channel); it is not posted again.", link=link,
        )  # fmt: skip
    return None


def _poster_said(name: str) -> str:
    """Who posts, as an edit's change says it: the bot (``none``), or the name in bold."""
    return t("the bot") if name == "none" else f"**{name}**"


def _diff_word(value: str) -> str:
    """A value of an edit's change in the reader's language: the words the diff says for
    no value and for a flag (it keeps them in English: the history stores them)."""
    return {"none": t("none"), "yes": t("yes"), "no": t("no")}.get(value, value)


def message_link(guild_id: int, channel_id: int, message_id: int | None) -> str:
    if message_id is None:
        return ""
    return f"https://discord.com/channels/{guild_id}/{channel_id}/{message_id}"


def edit_reply(outcome: EditOutcome, notes: list[str]) -> str:
    """The /edit answer: what changed (before → after), the next time, the posted message."""
    a, before = outcome.after, outcome.before
    if not outcome.changes:
        return t("Nothing to change: announcement **#{id}** is already like that.", id=a.local_id)
    lines = [
        t("✏️ Edited announcement **#{id}** in {channel}.", id=a.local_id,
          channel=f"<#{a.channel_id}>")
    ]  # fmt: skip
    for c in outcome.changes:
        if c.field == Field.MESSAGE:
            lines.append(t("**Message:** changed (preview below)"))
        elif c.field == Field.IMAGE:
            lines.append(t("**File:** now {file}", file=c.after))
        elif c.field == Field.FOOTER:
            lines.append(t("**Footer:** {footer}", footer=_diff_word(_cut(c.after, 100))))
        elif c.field == Field.EVENT:
            lines.append(t("**{field}:** {before} → {after}", field=_field_name(c.field),
                           before=event_said(outcome.event_before),
                           after=event_said(outcome.event_after)))  # fmt: skip
        elif c.field == Field.REMINDER:
            lines.append(t("**{field}:** {before} → {after}", field=_field_name(c.field),
                           before=lead_said(outcome.reminder_before),
                           after=lead_said(outcome.reminder_after)))  # fmt: skip
        elif c.field == Field.DELETE_AFTER:
            lines.append(t("**{field}:** {before} → {after}", field=_field_name(c.field),
                           before=lead_said(outcome.tidy_before.delete_after),
                           after=lead_said(outcome.tidy_after.delete_after)))  # fmt: skip
        elif c.field == Field.REPEAT:
            lines.append(t("**{field}:** {before} → {after}", field=_field_name(c.field),
                           before=repeat_text(before), after=repeat_text(a)))  # fmt: skip
        elif c.field == Field.AS_NAME:
            lines.append(t("**{field}:** {before} → {after}", field=_field_name(c.field),
                           before=_poster_said(c.before), after=_poster_said(c.after)))  # fmt: skip
        else:
            field = _field_name(c.field)
            lines.append(t("**{field}:** {before} → {after}", field=field,
                           before=_diff_word(c.before), after=_diff_word(c.after)))  # fmt: skip
    if a.state == AnnouncementState.SCHEDULED:
        lines.append(t("**Next:** {when}", when=when(outcome.next_fire)))
    else:
        lines.append(t("**State:** {state}", state=state_word(a.state)))
    link = message_link(a.guild_id, before.channel_id, outcome.message_id)
    note = _posted_note(outcome.posted, link)
    if note is not None:
        lines.append(note.replace("  ", " "))
    lines += [f"ℹ️ {n}" for n in notes]
    if any(c.field in (Field.MESSAGE, Field.MENTION) for c in outcome.changes):
        lines += [t("**Preview:**"), preview(a.text)]
    text = "\n".join(lines)
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


# --- /info -------------------------------------------------------------------------------------

REASON_LIMIT = 160
"""Characters of a failure reason or a history detail shown by /info."""
MIN_TEXT_SHOWN = 300
"""Room /info keeps for the text, shortening the history (oldest first) if it must."""


def _delivery_words(state: DeliveryState) -> str:
    return {
        DeliveryState.SENT: t("✅ posted"),
        DeliveryState.SENDING: t("⏳ being posted"),
        DeliveryState.FAILED: t("❌ failed"),
        DeliveryState.MISSED: t("❌ missed"),
    }.get(state, str(state))


def _no_times(state: AnnouncementState) -> str:
    return {
        AnnouncementState.PAUSED: t("none while paused (see `/resume`)"),
        AnnouncementState.SENT: t("none (it was posted)"),
        AnnouncementState.FAILED: t("none (it failed)"),
        AnnouncementState.CANCELED: t("none (it was canceled)"),
        AnnouncementState.DONE: t("none (it ended)"),
    }.get(state) or t("none to come")


def info_page(details: Details, hidden: bool) -> str:
    """The /info answer, at most ``MAX_MESSAGE`` characters: every section is shown; the
    text (as it will post) is cut to fit, with a note, and so is the history, oldest first,
    if the rest leaves too little room for the text. ``hidden``: the reader can't see the
    channel, so the text isn't shown."""
    history = list(details.history)
    earlier = details.earlier_history
    while True:
        head = _info_head(details, history, earlier)
        room = MAX_MESSAGE - len(head) - 1
        if room >= MIN_TEXT_SHOWN or not history:
            break
        history.pop(0)
        earlier = True
    a = details.shown or details.announcement  # as its next occurrence will post it
    text = f"`{hidden_words()}`" if hidden else _fitted_preview(a.text, room)
    page = head + "\n" + text
    return page if len(page) <= MAX_MESSAGE else page[: MAX_MESSAGE - 1] + "…"


def _info_head(details: Details, history: list[HistoryEntry], earlier: bool) -> str:
    a = details.announcement
    icon = STATE_ICON.get(a.state, "•")
    lines = [
        t("ℹ️ Announcement **#{id}** in {channel} · {icon} {state} · by {author}",
          id=a.local_id, channel=f"<#{a.channel_id}>", icon=icon, state=state_word(a.state),
          author=f"<@{a.author_id}>"),
        *_info_facts(details, history, earlier),
        t("**Text as it will post:**"),
    ]  # fmt: skip
    return "\n".join(lines)


def info_facts(details: Details) -> str:
    """What /info says of an announcement besides its number, state, channel and text (a
    page that shows those on their own, as the dashboard's does, shows each once): who
    made it, how it repeats, its pings, its post, event and failure, its next times,
    deliveries and history."""
    a = details.announcement
    by = t("**By:** {author}", author=f"<@{a.author_id}>")
    return "\n".join([by, *_info_facts(details, list(details.history), details.earlier_history)])


def _info_facts(details: Details, history: list[HistoryEntry], earlier: bool) -> list[str]:
    a = details.announcement
    lines = [t("**Repeats:** {repeat}", repeat=repeat_text(a))]
    if a.until_ts is not None:
        lines.append(t("**Until:** {when}", when=when(datetime.fromtimestamp(a.until_ts, UTC))))
    lines += _ends_lines(details)
    lines.append(t("**Pings:** {pings}", pings=_pings(a)))
    lines += content_lines(a, details.files)
    if details.places:
        places = " ".join(f"<#{p.channel_id}>" for p in details.places)
        lines.append(t("**Also in:** {channels}", channels=places))
    lines += event_lines(details)
    lines += reminder_lines(details.reminders)
    if details.posts_as is not None:
        lines.append(t("**Posts as:** **{name}**, through a webhook of the channel",
                       name=_cut(details.posts_as, 80)))  # fmt: skip
    lines += tidy_lines(details.tidy, details.post_problem)
    if a.failure and a.state in _SHOWS_FAILURE:
        lines.append(f"⚠️ {_cut(said_reason(a.failure))}")
    lines.append(t("**Next times:**"))
    if details.next_times:
        lines += [f"• {when(at)}" for at in details.next_times]
    else:
        lines.append("• " + _no_times(a.state))
    if details.skipped:
        skipped = ", ".join(discord_timestamp(at, "f") for at in details.skipped)
        lines.append(t("**Skipped:** {when}", when=skipped))
    lines.append(t("**Last deliveries:**"))
    if details.deliveries:
        for d in details.deliveries:
            lines.append(_delivery_line(a, d))
            lines += [_place_line(a, p) for p in details.place_deliveries if p.fire_ts == d.fire_ts]
    else:
        lines.append("• " + t("none yet"))
    lines.append(t("**History:**"))
    if earlier:
        lines.append("• *" + t("(earlier changes not shown)") + "*")
    lines += [_history_line(h) for h in history]
    return lines


def _ends_lines(details: Details) -> list[str]:
    """Its ``times`` (posts made, the last one) and its skipped dates, for /info."""
    a = details.announcement
    lines = []
    if a.times is not None:
        lines.append(
            tn("**Ends after:** {times} post ({made} made so far)",
               "**Ends after:** {times} posts ({made} made so far)",
               a.times, times=a.times, made=details.posts_made)
        )  # fmt: skip
        if details.last_post is not None:
            lines.append(t("**Last post:** {when}", when=when(details.last_post)))
    if details.skips:
        dates = "; ".join(s.words() for s in details.skips)
        lines.append(t("**Skipped dates** ({zone}): {dates}", zone=a.timezone, dates=dates))
    return lines


def skips_words(skips: Sequence[Skip], shown: int = 3) -> str:
    """The first ``shown`` skipped dates, and how many more."""
    words = ", ".join(s.words() for s in skips[:shown])
    if len(skips) > shown:
        words += " " + t("(+{count} more)", count=len(skips) - shown)
    return words


def _delivery_line(a: Announcement, d: PastDelivery) -> str:
    fired = discord_timestamp(d.fire_ts, "f")
    if d.state == DeliveryState.SKIPPED:  # its reason says who skipped it
        return f"• {fired} — ⏭️ {_cut(said_reason(d.error) if d.error else t('skipped'))}"
    line = f"• {fired} — {_delivery_words(d.state)}"
    if d.state == DeliveryState.SENT and d.message_id is not None:
        line += " " + post_link(a.guild_id, a, d.message_id)
        if d.late_by is not None and d.late_by >= 1:
            late = duration(timedelta(seconds=round(d.late_by)))
            line += " · " + t("sent late by {duration}", duration=late)
        if d.publish_state is not None:
            line += f" · {publish_words(d.publish_state, d.publish_error)}"
    elif d.error:
        line += f": {_cut(said_reason(d.error))}"
    if d.update_error:
        line += "\n  ⚠️ " + t(
            "the posted message could not be updated: {error}", error=_cut(d.update_error)
        )
    return line


def _place_line(a: Announcement, p: PlaceDelivery) -> str:
    """How an occurrence went in one of the other places (under its delivery's line)."""
    where = f"<#{p.channel_id}>"
    if p.state == PlaceState.SENT and p.message_id is not None:
        link = message_link(a.guild_id, p.channel_id, p.message_id)
        line = f"  ↳ {where} — {t('✅ posted')} {link}"
        if p.update_error:
            line += " · ⚠️ " + t(
                "the posted message could not be updated: {error}", error=_cut(p.update_error)
            )
        return line
    words = {
        PlaceState.QUEUED: t("⏳ waiting for its turn in the channel"),
        PlaceState.SENDING: t("⏳ being posted"),
        PlaceState.FAILED: t("❌ failed"),
        PlaceState.SKIPPED: t("⏭️ not posted"),
    }.get(p.state, str(p.state))
    line = f"  ↳ {where} — {words}"
    return line + f": {_cut(said_reason(p.error))}" if p.error else line


def _history_words(action: HistoryAction) -> str:
    """How /info says a change."""
    return {
        HistoryAction.POST_UPDATED: t("posted message updated"),
        HistoryAction.POST_UPDATE_FAILED: t("posted message could not be updated"),
    }.get(action) or _action_word(action)


def _action_word(action: HistoryAction) -> str:
    return {
        HistoryAction.CREATED: t("created"),
        HistoryAction.EDITED: t("edited"),
        HistoryAction.PAUSED: t("paused"),
        HistoryAction.RESUMED: t("resumed"),
        HistoryAction.SKIPPED: t("skipped"),
        HistoryAction.CANCELED: t("canceled"),
        HistoryAction.ENDED: t("ended"),
        HistoryAction.FAILED: t("failed"),
    }.get(action, str(action))


def _history_line(h: HistoryEntry) -> str:
    who = t("the bot") if h.actor_id is None else f"<@{h.actor_id}>"
    at = discord_timestamp(h.at, "f")
    what = _history_words(h.action)
    line = t("• {when} {what} by {who}", when=at, what=what, who=who)
    return line + f" — {_cut(h.detail)}" if h.detail else line


def _cut(text: str, limit: int = REASON_LIMIT) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _fitted_preview(text: str, room: int) -> str:
    """The text as a block quote in at most ``room`` characters: whole if it fits, else the
    longest start of it that fits with the note saying how much is left out."""
    whole = preview(text, len(text))
    if len(whole) <= room:
        return whole
    low, high = 0, len(text)  # the longest cut that fits lies in [low, high)
    while high - low > 1:
        mid = (low + high) // 2
        if len(_cut_preview(text, mid)) <= room:
            low = mid
        else:
            high = mid
    return _cut_preview(text, low)


def _cut_preview(text: str, limit: int) -> str:
    cut = t(
        "…cut to fit: {more} more of its {total} characters are not shown here (they will be "
        "posted)", more=len(text) - limit, total=len(text),
    )  # fmt: skip
    return preview(text[:limit], limit) + f"\n*{cut}*"


def canceled(before: Announcement) -> str:
    """The answer to a cancel, given the announcement as it was; refused (nothing was
    changed) if it was no longer live."""
    n = before.local_id
    if before.state == AnnouncementState.SENT:
        raise Refusal(t("Announcement #{id} was already posted; there is nothing to cancel.", id=n))
    if before.state == AnnouncementState.CANCELED:
        raise Refusal(t("Announcement #{id} was already canceled.", id=n))
    if before.state == AnnouncementState.FAILED:
        raise Refusal(
            t("Announcement #{id} already failed ({failure}); nothing to cancel.", id=n,
              failure=said_reason(before.failure or ""))
        )  # fmt: skip
    what = t("Its schedule is deleted.") if before.recurring else t("It will not be posted.")
    return t(
        "🚫 Canceled announcement **#{id}** for {channel}. {what}", id=n,
        channel=f"<#{before.channel_id}>", what=what,
    )  # fmt: skip


# --- templates ---------------------------------------------------------------------------------


def template_saved(template: Template, source: int) -> str:
    heading = t(
        "💾 Saved announcement **#{id}** as the template `{name}`.", id=source, name=template.name
    )
    return _template_answer(heading, template)


def form_template_saved(template: Template) -> str:
    """The dashboard form's "Save as template": what the template holds; nothing scheduled."""
    heading = t(
        "💾 Template `{name}` saved from the form; nothing was scheduled.", name=template.name
    )
    return _template_answer(heading, template)


def _template_answer(heading: str, template: Template) -> str:
    """A template just saved: ``heading``, what it holds, and how to use it."""
    lines = [heading, *_template_fields(template)]
    lines.append(
        t("Use it with `/schedule template:{name}` (any option you give overrides it).",
          name=template.name)
    )  # fmt: skip
    return "\n".join(lines)


def _template_fields(template: Template) -> list[str]:
    parts = []
    if template.channel_id is not None:
        parts.append(t("in {channel}", channel=f"<#{template.channel_id}>"))
    if template.also_in:
        places = " ".join(f"<#{c}>" for c in template.also_in)
        parts.append(t("also in {channels}", channels=places))
    if template.title is not None:
        parts.append(t("titled **{title}**", title=_cut(template.title, 80)))
    if template.mention is not None:
        parts.append(t("pings {mention}", mention=mention_markup(template.mention)))
    if template.silent:
        parts.append(t("silent"))
    if template.image is not None:
        parts.append(t("with `{file}`", file=template.image.filename))
    if template.reminder is not None:
        parts.append(t("reminders {before} before", before=lead_said(template.reminder)))
    if template.post_as is not None:
        parts.append(t("posts as **{name}**", name=_cut(template.post_as.name, 80)))
    if not template.style.empty:
        parts.append(t("styled"))
    if template.tidy.on:
        parts.append(t("its posts: {what}", what=tidy_said(template.tidy)))
    fields = ("  " + " · ".join(parts)) if parts else "  " + t("(text only)")
    return [fields, f"  {_snippet(template.content)}"]


def template_list(templates: Sequence[Template], limit: int) -> str:
    """/template list: every template of the server, with what it holds."""
    if not templates:
        return t(
            "No templates yet. Save one from an announcement with "
            "`/template save name:… from:<id>`."
        )
    out = [t("**Templates** ({count} of at most {limit})", count=len(templates), limit=limit)]
    for template in templates:
        out.append(f"• `{template.name}`\n" + "\n".join(_template_fields(template)))
    text = "\n".join(out)
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


# --- export and import -------------------------------------------------------------------------


def exported(announcements: int, templates: int, size: int) -> str:
    what = tn(
        "📦 This server's {n} live announcement", "📦 This server's {n} live announcements",
        announcements,
    ) + tn(" and {n} template", " and {n} templates", templates)  # fmt: skip
    return what + t(
        " ({size} KiB). Import it here or in another server with `/import file:`; channels "
        "and roles are found there by name.", size=f"{size / 1024:.0f}",
    )  # fmt: skip


def _outcome_line(r: RowOutcome) -> str:
    if r.refused is not None:
        return "❌ " + t("{label}: {outcome}", label=r.label, outcome=r.refused)
    if r.skipped is not None:
        return "⏭️ " + t("{label}: {outcome}", label=r.label, outcome=r.skipped)
    return "✅ " + t("{label}: {outcome}", label=r.label, outcome=r.created)


def import_report(plan: ImportPlan, *, done: ImportDone | None = None) -> tuple[str, str]:
    """The answer to an import (its dry run, or what it applied), cut to a message, and the
    whole report row by row (sent as a file when the answer can't hold it)."""
    rows = plan.announcements + plan.templates
    refused = plan.refused
    created = len(plan.rows) + len(plan.new_templates)
    skipped = sum(r.skipped is not None for r in rows)
    if done is not None:
        head = tn(
            "📥 Imported {n} announcement", "📥 Imported {n} announcements", len(done.created)
        )
        head += tn(" and {n} template", " and {n} templates", len(done.templates))
        if skipped:
            head += tn("; {n} already here", "; {n} already here", skipped)
        head += "."
    elif refused:
        head = tn(
            "🚫 Nothing can be imported: {count} of the {n} row would be refused (below). An "
            "import applies all of it or nothing; fix those rows (or this server) and import "
            "the file again.",
            "🚫 Nothing can be imported: {count} of the {n} rows would be refused (below). An "
            "import applies all of it or nothing; fix those rows (or this server) and import "
            "the file again.",
            len(rows), count=len(refused),
        )  # fmt: skip
    elif not plan.anything:
        head = (
            tn("Nothing to import: all {n} rows are already here.",
               "Nothing to import: all {n} rows are already here.", len(rows))
            if rows
            else t("Nothing to import: the file has no announcements or templates.")
        )  # fmt: skip
    else:
        confirm = t(
            "Nothing is written until you confirm (the button below, or `/import` again with "
            "`confirm: true`)."
        )
        if skipped:
            head = t("🔎 Dry run: {count} to create, {skipped} already here. {confirm}",
                     count=created, skipped=skipped, confirm=confirm)  # fmt: skip
        else:
            head = t("🔎 Dry run: {count} to create. {confirm}", count=created, confirm=confirm)
    ordered = sorted(rows, key=lambda r: r.refused is None)  # refused rows first
    lines = [_outcome_line(r) for r in ordered]
    whole = "\n".join([head, *lines])
    shown = [head]
    for i, line in enumerate(lines):
        rest = len(lines) - i
        if sum(len(x) + 1 for x in shown) + len(line) + 60 > MAX_MESSAGE:
            more = tn("…and {n} more row (all of them in the attached report)",
                      "…and {n} more rows (all of them in the attached report)", rest)  # fmt: skip
            shown.append(f"*{more}*")
            break
        shown.append(line)
    return "\n".join(shown), whole


REFUSED_WRITE = (
    "I can't save anything right now: my database can't be written (its disk is full or "
    "failing). Nothing was saved; try again later."
)


def expected_answer(error: BaseException) -> str | None:
    """What to tell the member about an error their request can cause (a refusal, bad
    input, a change that can't be made, an unknown id, a full disk); None for any other."""
    if isinstance(
        error,
        Refusal
        | InputError
        | NotEditable
        | OverLimit
        | TemplateRefused
        | ImportConflict
        | DocumentRefused,
    ):
        return str(error)
    if isinstance(error, NotPossible):
        return not_possible(error)
    if isinstance(error, ReminderOff):
        return reminder_off(error.announcement)
    if isinstance(error, NotFound):
        return t(
            "announcement #{id} not found. Use `/list` to see this server's announcements.",
            id=error.local_id,
        )
    if refused_write(error):
        # The store has logged why, once; the member can only wait for the operator.
        return t(
            "I can't save anything right now: my database can't be written (its disk is full "
            "or failing). Nothing was saved; try again later."
        )
    return None


def unexpected_answer(error: BaseException, where: str) -> str:
    """The answer to an error no answer is written for (:func:`expected_answer` gave none):
    it is logged with its traceback, ``where`` it happened (``command schedule``,
    ``dashboard POST /g/1/new``) and a new error id, and answered with that id only (never
    a traceback)."""
    error_id = uuid.uuid4().hex[:8]
    log.error("%s failed (error id %s)", where, error_id, exc_info=error)
    return t("Something went wrong on my side (error id `{id}`). Nothing was saved.", id=error_id)


# --- reminders ---------------------------------------------------------------------------------


def lead_said(lead: float | None) -> str:
    """A reminder's lead in the reader's language: ``15 minutes``, or ``none``."""
    return t("none") if lead is None else duration(timedelta(seconds=lead))


def _next_said(nxt: datetime | None) -> str:
    return t("none to come yet") if nxt is None else when(nxt)


def reminders_on(s: Subscribed) -> str:
    """The answer to a member who asked for reminders (the button, /remindme)."""
    a = s.announcement
    head = (
        t("⏰ You are already reminded of announcement **#{id}** in {channel}: now {before} "
          "before each post, by direct message.", id=a.local_id, channel=f"<#{a.channel_id}>",
          before=lead_said(s.before))
        if s.already
        else t("⏰ You will be reminded of announcement **#{id}** in {channel} by direct "
               "message, {before} before each post.", id=a.local_id,
               channel=f"<#{a.channel_id}>", before=lead_said(s.before))
    )  # fmt: skip
    return "\n".join(
        [
            head,
            t("**Next post:** {when}", when=_next_said(s.next_fire)),
            t("Your direct messages from this server must be open to get them. To stop: "
              "`/remindme id: {id} stop: true`, or press **Remind me** again.", id=a.local_id),
        ]
    )  # fmt: skip


def reminder_already(a: Announcement, lead: float | None) -> str:
    """The answer to a second press of Remind me: the member is reminded already."""
    return t(
        "⏰ You are already reminded of announcement **#{id}**, {before} before each post. "
        "Stop?", id=a.local_id, before=lead_said(lead),
    )  # fmt: skip


def reminder_stopped(a: Announcement, was: bool) -> str:
    """The answer to a member who stopped their reminders."""
    if was:
        return t("🔕 You won't be reminded of announcement **#{id}** any more.", id=a.local_id)
    return t("You weren't being reminded of announcement **#{id}**.", id=a.local_id)


def reminder_off(a: Announcement) -> str:
    """The refusal of a reminder for an announcement whose reminders are off."""
    return t(
        "Announcement **#{id}** doesn't send reminders. A manager can turn them on with "
        "`/edit id: {id} reminder: 15m`.", id=a.local_id,
    )  # fmt: skip


def reminder_lines(info: ReminderInfo | None) -> list[str]:
    """/info's reminders: the lead, who will be reminded, and how the last ones went."""
    if info is None or info.lead is None:
        return []
    who = tn("{n} member asked", "{n} members asked", info.subscribers)
    if info.event:
        who = t("{asked}, and those Interested in its Discord event", asked=who)
    lines = [t("**Reminders:** {before} before each post, by DM · {who}",
               before=lead_said(info.lead), who=who)]  # fmt: skip
    for c in info.counts[:1]:
        skipped = [
            tn("{n} with DMs closed", "{n} with DMs closed", c.closed) if c.closed else "",
            tn("{n} left the server", "{n} left the server", c.left) if c.left else "",
            tn("{n} can't see the channel", "{n} can't see the channel", c.hidden)
            if c.hidden else "",
            tn("{n} too late", "{n} too late", c.late) if c.late else "",
            tn("{n} may not have been delivered", "{n} may not have been delivered", c.failed)
            if c.failed else "",
        ]  # fmt: skip
        line = t("• {when}: {sent} sent", when=discord_timestamp(c.fire_ts, "f"), sent=c.sent)
        if c.sending:
            line += " · " + t("{n} being sent", n=c.sending)
        if c.skipped:
            line += " · " + t("{n} skipped ({why})", n=c.skipped,
                              why=", ".join(s for s in skipped if s))  # fmt: skip
        lines.append(line)
    return lines


def posting_now(done: PostNow) -> str:
    """The answer to /postnow: the next post goes out now, as an extra post."""
    a = done.announcement
    return t(
        "📣 Announcement **#{id}**'s next post ({when}) is being posted in {channel} now, as "
        "an extra post. Its schedule is unchanged: that post still goes out at its time.",
        id=a.local_id, when=when(done.fire), channel=f"<#{a.channel_id}>",
    )  # fmt: skip


def test_sent(a: Announcement, fire: datetime) -> str:
    """The answer to /test once the DM is sent."""
    return t(
        "📬 I sent you by direct message exactly what announcement **#{id}** will post in "
        "{channel} at {when}.", id=a.local_id, channel=f"<#{a.channel_id}>", when=when(fire),
    )  # fmt: skip


def test_not_sent(a: Announcement, closed: bool, reason: str) -> str:
    """The answer to /test when the DM could not be sent (``closed``: the member's direct
    messages are closed, 50007)."""
    if closed:
        return t(
            "I can't send you direct messages: Discord refused, your DMs are closed. Allow "
            "direct messages from this server's members (the server's Privacy Settings), "
            "then try `/test id:{id}` again.", id=a.local_id,
        )  # fmt: skip
    return t(
        "I couldn't send you the test of announcement #{id}: {reason}. Try again in a moment.",
        id=a.local_id, reason=_cut(said_reason(reason)),
    )  # fmt: skip


def tidy_said(tidy: Tidy) -> str:
    """What becomes of the posts, in words: ``pinned (the previous one unpinned), the
    previous one deleted, deleted after 24 hours``."""
    parts = []
    if tidy.pin:
        parts.append(t("each pinned (the previous one unpinned)"))
    if tidy.replace:
        parts.append(t("the previous one deleted once the new one is up"))
    if tidy.delete_after is not None:
        parts.append(t("each deleted {after} after it went up", after=lead_said(tidy.delete_after)))
    return ", ".join(parts)


def tidy_lines(tidy: Tidy | None, problem: str | None) -> list[str]:
    """The previous post's settings and the last refusal, for /info."""
    lines = []
    if tidy is not None and tidy.on:
        lines.append(t("**Its posts:** {what}", what=tidy_said(tidy)))
    if problem is not None:
        lines.append("⚠️ " + t("Last refused: {reason}", reason=_cut(said_reason(problem))))
    return lines
