"""What the bot says: confirmations, list pages, labels, and the answer to every error (the
commands and the dashboard answer from here alike). Pure text, no Discord calls."""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from scheduler.stores.sqlite import refused_write

from .announcements import (
    Announcement,
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
    Skipped,
    TemplateRefused,
    Why,
)
from .announcements.diff import Field
from .announcements.placeholders import as_posted_at
from .limits import MAX_CHOICE_NAME, MAX_MESSAGE
from .models import (
    AnnouncementState,
    DeliveryState,
    Destination,
    HistoryAction,
    HistoryEntry,
    PastDelivery,
    PublishState,
    Template,
    mention_markup,
)
from .parsing import InputError, discord_timestamp, spoken_duration
from .parsing.placeholders import EVENT_LINK
from .requests.checks import Refusal
from .requests.export_doc import DocumentRefused

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    from .requests.importing import ImportPlan, RowOutcome

log = logging.getLogger(__name__)

PAGE_SIZE = 6
PREVIEW_LIMIT = 1000
HIDDEN = "(in a channel you can't see)"
"""Shown instead of the text of an announcement for a channel the reader can't view."""


def when(dt: datetime | None) -> str:
    if dt is None:
        return "—"
    return f"{discord_timestamp(dt, 'F')} ({discord_timestamp(dt, 'R')})"


def preview(text: str, limit: int = PREVIEW_LIMIT) -> str:
    """The message as a block quote, cut at ``limit`` characters."""
    shown = text if len(text) <= limit else text[:limit]
    quoted = "\n".join("> " + line if line else ">" for line in shown.split("\n"))
    if len(text) > limit:
        quoted += f"\n*…and {len(text) - limit} more characters*"
    return quoted


def confirmation(
    a: Announcement, first: datetime, notes: list[str], upcoming: Sequence[datetime] = ()
) -> str:
    """What /schedule answers: the first time, the rule in words and, for a repeating
    announcement, its first posts (``upcoming``, the first included), the pings, notes; the
    preview is the first post (its placeholders rendered)."""
    repeat = a.repeat_words or "no (posted once)"
    lines = [
        f"✅ Scheduled announcement **#{a.local_id}** in <#{a.channel_id}>.",
        f"**First:** {when(first)}",
        f"**Repeats:** {repeat}",
    ]
    if a.until_ts is not None:
        lines.append(f"**Until:** {when(datetime.fromtimestamp(a.until_ts, UTC))}, then it ends")
    if a.recurring and len(upcoming) > 1:
        lines.append("**Next:** " + ", ".join(discord_timestamp(t, "F") for t in upcoming))
    lines.append(f"**Pings:** {_pings(a)}")
    lines += content_lines(a)
    lines += [f"ℹ️ {n}" for n in notes]
    lines += ["**Preview:**"]
    shown = as_posted_at(a, first.timestamp())
    if shown.rich.title is not None:
        lines.append(f"> **{_cut(shown.rich.title, 256)}**")
    lines.append(preview(shown.text))
    return "\n".join(lines)


_WHERE = {
    Destination.ANNOUNCEMENT: "an announcement channel",
    Destination.THREAD: "a thread (an archived one is reopened by the post)",
    Destination.FORUM: "a forum: each time a new post",
}


def content_lines(a: Announcement, files: Sequence[str] = ()) -> list[str]:
    """What the post is besides its text: where it goes, embed, files, silence, publishing."""
    rich = a.rich
    lines = []
    if rich.destination in _WHERE:
        lines.append(f"**Posts in:** {_WHERE[rich.destination]}")
    if rich.title is not None:
        lines.append(f"**Embed title:** {rich.title}")
    if files:
        lines.append("**Files:** " + ", ".join(f"`{name}`" for name in files))
    if rich.tags:
        lines.append("**Tags:** " + ", ".join(str(t) for t in rich.tags))
    if rich.silent:
        lines.append("**Silent:** yes (@silent: no push notification)")
    if rich.destination == Destination.ANNOUNCEMENT:
        lines.append(f"**Published to followers:** {'yes' if rich.publish else 'no'}")
    return lines


def event_lines(details: Details) -> list[str]:
    """The Discord event each occurrence gets, and the coming ones made (with their links)."""
    spec = details.event
    if spec is None:
        return []
    where = spec.location if spec.channel_id is None else f"<#{spec.channel_id}>"
    lines = [f"**Discord event:** {where}, {spec.minutes} min, for each occurrence"]
    for e in details.events[:INFO_EVENTS]:
        at = discord_timestamp(e.fire_ts, "f")
        if e.state == "created" and e.event_id is not None:
            link = EVENT_LINK.format(guild_id=details.announcement.guild_id, event_id=e.event_id)
            lines.append(f"• {at} — {link}")
        elif e.state == "failed":
            lines.append(f"• {at} — ⚠️ not created: {_cut(e.error or 'refused')}")
        else:
            lines.append(f"• {at} — being created")
    return lines


INFO_EVENTS = 3
"""The coming events /info lists."""


def _pings(a: Announcement) -> str:
    allowed = a.allowed_mentions
    parts = []
    if a.mention is not None:
        parts.append(mention_markup(a.mention))
    if allowed.get("everyone") and a.mention not in ("everyone", "here"):
        parts.append("@everyone/@here in the text")
    extra = [r for r in allowed.get("roles", []) if a.mention != f"role:{r}"]
    parts += [f"<@&{r}>" for r in extra]
    return ", ".join(parts) if parts else "no role or @everyone pings"


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
        return "No announcements yet. Create one with `/schedule`."
    out = [f"**Announcements** — page {page + 1} of {pages} ({listing.total} in all)"]
    for a in listing.items:
        icon = STATE_ICON.get(a.state, "•")
        head = f"{icon} **#{a.local_id}** in <#{a.channel_id}> · {a.state} · by <@{a.author_id}>"
        lines = [head]
        nxt = listing.next_fires.get(a.id)
        if a.state == AnnouncementState.SCHEDULED:
            lines.append(f"  next: {when(nxt)}")
        elif a.state == AnnouncementState.PAUSED:
            lines.append(f"  paused: nothing posts until `/resume id:{a.local_id}`")
        elif a.state == AnnouncementState.DONE:
            lines.append("  ended: its `until` was reached; it posts nothing more")
        lines.append(f"  repeats: {a.repeat_words or 'no'}")
        if a.until_ts is not None and a.state in (
            AnnouncementState.SCHEDULED,
            AnnouncementState.PAUSED,
        ):
            lines.append(f"  until: {when(datetime.fromtimestamp(a.until_ts, UTC))}")
        if a.last_message_id is not None:
            lines.append(f"  posted: {post_link(guild_id, a, a.last_message_id)}")
        if a.id in listing.published:
            lines.append(f"  {publish_words(*listing.published[a.id])}")
        if a.failure and a.state in _SHOWS_FAILURE:
            lines.append(f"  ⚠️ {a.failure}")
        lines.append(f"  `{HIDDEN}`" if a.channel_id in hidden else f"  {_snippet(a.text)}")
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
        return f"not published: {error}"
    return {
        PublishState.PENDING: "publishing (waiting for the channel's publish limit)",
        PublishState.PUBLISHED: "published",
        PublishState.PUBLISHED_LATE: "published late",
    }[state]


def _snippet(text: str, width: int = 80) -> str:
    flat = " ".join(text.split())
    flat = flat if len(flat) <= width else flat[: width - 1] + "…"
    return f"`{flat.replace('`', 'ˋ')}`" if flat else "`(empty)`"


def choice_label(a: Announcement, nxt: datetime | None, hidden: bool = False) -> str:
    """An autocomplete label (at most ``MAX_CHOICE_NAME`` characters); ``hidden``: without
    the text."""
    when_text = nxt.astimezone(UTC).strftime("%b %d %H:%M UTC") if nxt else a.state
    flat = HIDDEN if hidden else " ".join(a.content.split())
    label = f"#{a.local_id} · {when_text} · {flat}"
    return label if len(label) <= MAX_CHOICE_NAME else label[: MAX_CHOICE_NAME - 1] + "…"


def not_possible(error: NotPossible) -> str:
    """Why a change can't be made, and what to do instead (nothing was changed)."""
    a = error.announcement
    n = "?" if a is None else a.local_id
    name = f"Announcement #{n}"
    at = "—" if error.at is None else when(error.at)
    texts = {
        Why.SENT: f"{name} was already posted; there is nothing left to change.",
        Why.CANCELED: f"{name} was canceled. Schedule a new one with `/schedule`.",
        Why.FAILED: f"{name} failed ({(a and a.failure) or 'see `/list`'}). Schedule it "
        "again with `/schedule`.",
        Why.DONE: f"{name} has ended: its `until` was reached. Schedule a new one with "
        "`/schedule`.",
        Why.ALREADY_PAUSED: f"{name} is already paused. Use `/resume id:{n}` to post it again.",
        Why.NOT_PAUSED: f"{name} isn't paused; there is nothing to resume.",
        Why.TIME_PASSED: f"{name}'s time, {at}, passed while it was paused, so it can't just "
        f"resume. Give it a new time with `/edit id:{n} when:…` (it stays paused until then).",
        Why.ONE_OFF: f"{name} posts only once, so there is no next occurrence to skip. "
        f"Use `/cancel id:{n}` to stop it, or `/pause id:{n}`.",
        Why.PAUSED: f"{name} is paused: nothing posts until you `/resume id:{n}` it. Resume "
        "it first, then skip.",
        Why.NOTHING_LEFT: f"{name} has nothing left to post before its `until` ({at}). Give "
        f"it a later one with `/edit id:{n} until:…`, or `/cancel` it.",
        Why.UNTIL_ONE_OFF: f"{name} posts only once; `until` is for repeating announcements.",
        Why.UNTIL_BEFORE_FIRST: f"Its first time would be {at}, after `until`: nothing would "
        "ever be posted. Pick a later `until`.",
    }
    return texts[error.why] + " Nothing was changed."


def paused(a: Announcement) -> str:
    what = "Its schedule is stopped" if a.recurring else "It will not be posted"
    return (
        f"⏸️ Paused announcement **#{a.local_id}** for <#{a.channel_id}>. {what} until you "
        f"`/resume id:{a.local_id}` it."
    )


def resumed(a: Announcement, nxt: datetime | None) -> str:
    lines = [f"▶️ Resumed announcement **#{a.local_id}** for <#{a.channel_id}>."]
    lines.append(f"**Next:** {when(nxt)}")
    if a.recurring:
        lines.append("Times that passed while it was paused are not posted.")
    if a.failure:
        lines.append(f"The failure that paused it is cleared ({a.failure}).")
    return "\n".join(lines)


def skipped(s: Skipped) -> str:
    a = s.announcement
    lines = [
        f"⏭️ Skipping announcement **#{a.local_id}** at {when(s.skipped)}: it won't be posted then.",
        f"**Next after that:** {when(s.then)}"
        if s.then is not None
        else "That was the last one before its `until`: it then ends.",
    ]
    return "\n".join(lines)


_FIELD_NAMES = {
    Field.MENTION: "Pings",
    Field.CHANNEL: "Channel",
    Field.WHEN: "When",
    Field.REPEAT: "Repeats",
    Field.TIMEZONE: "Time zone",
    Field.UNTIL: "Until",
    Field.TITLE: "Embed title",
    Field.SILENT: "Silent",
    Field.TAGS: "Tags",
    Field.PUBLISH: "Published to followers",
}
_POSTED_NOTES = {
    PostedUpdate.QUEUED: "✏️ The posted message {link} is being edited in place.",
    PostedUpdate.LEFT: "The posted message {link} is left as it was (`update_posted: false`).",
    PostedUpdate.AFTER_SEND: (
        "It is being posted right now; the posted message will show the new text."
    ),
    PostedUpdate.UNAVAILABLE: (
        "The posted message {link} can't be updated (deleted, or the announcement moved to "
        "another channel); it is not posted again."
    ),
}


def message_link(guild_id: int, channel_id: int, message_id: int | None) -> str:
    if message_id is None:
        return ""
    return f"https://discord.com/channels/{guild_id}/{channel_id}/{message_id}"


def edit_reply(outcome: EditOutcome, notes: list[str]) -> str:
    """The /edit answer: what changed (before → after), the next time, the posted message."""
    a, before = outcome.after, outcome.before
    if not outcome.changes:
        return f"Nothing to change: announcement **#{a.local_id}** is already like that."
    lines = [f"✏️ Edited announcement **#{a.local_id}** in <#{a.channel_id}>."]
    for c in outcome.changes:
        if c.field == Field.MESSAGE:
            lines.append("**Message:** changed (preview below)")
        elif c.field == Field.IMAGE:
            lines.append(f"**File:** now {c.after}")
        else:
            lines.append(f"**{_FIELD_NAMES[c.field]}:** {c.before} → {c.after}")
    if a.state == AnnouncementState.SCHEDULED:
        lines.append(f"**Next:** {when(outcome.next_fire)}")
    else:
        lines.append(f"**State:** {a.state}")
    note = _POSTED_NOTES.get(outcome.posted)
    if note is not None:
        link = message_link(a.guild_id, before.channel_id, outcome.message_id)
        lines.append(note.format(link=link).replace("  ", " "))
    lines += [f"ℹ️ {n}" for n in notes]
    if any(c.field in (Field.MESSAGE, Field.MENTION) for c in outcome.changes):
        lines += ["**Preview:**", preview(a.text)]
    text = "\n".join(lines)
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


# --- /info -------------------------------------------------------------------------------------

REASON_LIMIT = 160
"""Characters of a failure reason or a history detail shown by /info."""
MIN_TEXT_SHOWN = 300
"""Room /info keeps for the text, shortening the history (oldest first) if it must."""
DELIVERY_ICON = {
    DeliveryState.SENT: "✅ posted",
    DeliveryState.SENDING: "⏳ being posted",
    DeliveryState.FAILED: "❌ failed",
    DeliveryState.MISSED: "❌ missed",
}
_NO_TIMES = {
    AnnouncementState.PAUSED: "none while paused (see `/resume`)",
    AnnouncementState.SENT: "none (it was posted)",
    AnnouncementState.FAILED: "none (it failed)",
    AnnouncementState.CANCELED: "none (it was canceled)",
    AnnouncementState.DONE: "none (it ended)",
}


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
    text = f"`{HIDDEN}`" if hidden else _fitted_preview(a.text, room)
    page = head + "\n" + text
    return page if len(page) <= MAX_MESSAGE else page[: MAX_MESSAGE - 1] + "…"


def _info_head(details: Details, history: list[HistoryEntry], earlier: bool) -> str:
    a = details.announcement
    icon = STATE_ICON.get(a.state, "•")
    lines = [
        f"ℹ️ Announcement **#{a.local_id}** in <#{a.channel_id}> · {icon} {a.state} · "
        f"by <@{a.author_id}>",
        f"**Repeats:** {a.repeat_words or 'no (posted once)'}",
    ]
    if a.until_ts is not None:
        lines.append(f"**Until:** {when(datetime.fromtimestamp(a.until_ts, UTC))}")
    lines.append(f"**Pings:** {_pings(a)}")
    lines += content_lines(a, details.files)
    lines += event_lines(details)
    if a.failure and a.state in _SHOWS_FAILURE:
        lines.append(f"⚠️ {_cut(a.failure)}")
    lines.append("**Next times:**")
    if details.next_times:
        lines += [f"• {when(t)}" for t in details.next_times]
    else:
        lines.append("• " + _NO_TIMES.get(a.state, "none to come"))
    if details.skipped:
        lines.append(
            "**Skipped:** " + ", ".join(discord_timestamp(t, "f") for t in details.skipped)
        )
    lines.append("**Last deliveries:**")
    if details.deliveries:
        lines += [_delivery_line(a, d) for d in details.deliveries]
    else:
        lines.append("• none yet")
    lines.append("**History:**")
    if earlier:
        lines.append("• *(earlier changes not shown)*")
    lines += [_history_line(h) for h in history]
    lines.append("**Text as it will post:**")
    return "\n".join(lines)


def _delivery_line(a: Announcement, d: PastDelivery) -> str:
    fired = discord_timestamp(d.fire_ts, "f")
    if d.state == DeliveryState.SKIPPED:  # its reason says who skipped it
        return f"• {fired} — ⏭️ {_cut(d.error or 'skipped')}"
    line = f"• {fired} — {DELIVERY_ICON.get(d.state, d.state)}"
    if d.state == DeliveryState.SENT and d.message_id is not None:
        line += " " + post_link(a.guild_id, a, d.message_id)
        if d.late_by is not None and d.late_by >= 1:
            line += f" · sent late by {spoken_duration(timedelta(seconds=round(d.late_by)))}"
        if d.publish_state is not None:
            line += f" · {publish_words(d.publish_state, d.publish_error)}"
    elif d.error:
        line += f": {_cut(d.error)}"
    if d.update_error:
        line += f"\n  ⚠️ the posted message could not be updated: {_cut(d.update_error)}"
    return line


HISTORY_WORDS = {
    HistoryAction.POST_UPDATED: "posted message updated",
    HistoryAction.POST_UPDATE_FAILED: "posted message could not be updated",
}
"""How /info says the changes whose action name isn't already a verb."""


def _history_line(h: HistoryEntry) -> str:
    who = "the bot" if h.actor_id is None else f"<@{h.actor_id}>"
    at = discord_timestamp(h.at, "f")
    what = HISTORY_WORDS.get(h.action, str(h.action))
    line = f"• {at} {what} by {who}"
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
    return preview(text[:limit], limit) + (
        f"\n*…cut to fit: {len(text) - limit} more of its {len(text)} characters "
        "are not shown here (they will be posted)*"
    )


def canceled(before: Announcement) -> str:
    """The answer to a cancel, given the announcement as it was; refused (nothing was
    changed) if it was no longer live."""
    n = before.local_id
    if before.state == AnnouncementState.SENT:
        raise Refusal(f"Announcement #{n} was already posted; there is nothing to cancel.")
    if before.state == AnnouncementState.CANCELED:
        raise Refusal(f"Announcement #{n} was already canceled.")
    if before.state == AnnouncementState.FAILED:
        raise Refusal(f"Announcement #{n} already failed ({before.failure}); nothing to cancel.")
    what = "Its schedule is deleted." if before.recurring else "It will not be posted."
    return f"🚫 Canceled announcement **#{n}** for <#{before.channel_id}>. {what}"


# --- templates ---------------------------------------------------------------------------------


def template_saved(t: Template, source: int) -> str:
    lines = [f"💾 Saved announcement **#{source}** as the template `{t.name}`."]
    lines += _template_fields(t)
    lines.append(f"Use it with `/schedule template:{t.name}` (any option you give overrides it).")
    return "\n".join(lines)


def _template_fields(t: Template) -> list[str]:
    parts = []
    if t.channel_id is not None:
        parts.append(f"in <#{t.channel_id}>")
    if t.title is not None:
        parts.append(f"titled **{_cut(t.title, 80)}**")
    if t.mention is not None:
        parts.append(f"pings {mention_markup(t.mention)}")
    if t.silent:
        parts.append("silent")
    if t.image is not None:
        parts.append(f"with `{t.image.filename}`")
    return [("  " + " · ".join(parts)) if parts else "  (text only)", f"  {_snippet(t.content)}"]


def template_list(templates: Sequence[Template], limit: int) -> str:
    """/template list: every template of the server, with what it holds."""
    if not templates:
        return (
            "No templates yet. Save one from an announcement with "
            "`/template save name:… from:<id>`."
        )
    out = [f"**Templates** ({len(templates)} of at most {limit})"]
    for t in templates:
        out.append(f"• `{t.name}`\n" + "\n".join(_template_fields(t)))
    text = "\n".join(out)
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


# --- export and import -------------------------------------------------------------------------


def exported(announcements: int, templates: int, size: int) -> str:
    return (
        f"📦 This server's {announcements} live announcement{'s' if announcements != 1 else ''} "
        f"and {templates} template{'s' if templates != 1 else ''} ({size / 1024:.0f} KiB). "
        "Import it here or in another server with `/import file:`; channels and roles are "
        "found there by name."
    )


def _outcome_line(r: RowOutcome) -> str:
    if r.refused is not None:
        return f"❌ {r.label}: {r.refused}"
    if r.skipped is not None:
        return f"⏭️ {r.label}: {r.skipped}"
    return f"✅ {r.label}: {r.created}"


def import_report(plan: ImportPlan, *, done: ImportDone | None = None) -> tuple[str, str]:
    """The answer to an import (its dry run, or what it applied), cut to a message, and the
    whole report row by row (sent as a file when the answer can't hold it)."""
    rows = plan.announcements + plan.templates
    refused = plan.refused
    created = len(plan.rows) + len(plan.new_templates)
    skipped = sum(r.skipped is not None for r in rows)
    if done is not None:
        head = (
            f"📥 Imported {len(done.created)} announcement{'s' if len(done.created) != 1 else ''}"
            f" and {len(done.templates)} template{'s' if len(done.templates) != 1 else ''}"
            + (f"; {skipped} already here" if skipped else "")
            + "."
        )
    elif refused:
        head = (
            f"🚫 Nothing can be imported: {len(refused)} of the {len(rows)} rows would be "
            "refused (below). An import applies all of it or nothing; fix those rows (or "
            "this server) and import the file again."
        )
    elif not plan.anything:
        head = (
            f"Nothing to import: all {len(rows)} rows are already here." if rows else
            "Nothing to import: the file has no announcements or templates."
        )  # fmt: skip
    else:
        head = (
            f"🔎 Dry run: {created} to create"
            + (f", {skipped} already here" if skipped else "")
            + ". Nothing is written until you confirm (the button below, or `/import` again "
            "with `confirm: true`)."
        )
    ordered = sorted(rows, key=lambda r: r.refused is None)  # refused rows first
    lines = [_outcome_line(r) for r in ordered]
    whole = "\n".join([head, *lines])
    shown = [head]
    for i, line in enumerate(lines):
        rest = len(lines) - i
        if sum(len(x) + 1 for x in shown) + len(line) + 60 > MAX_MESSAGE:
            shown.append(f"*…and {rest} more rows (all of them in the attached report)*")
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
    if isinstance(error, NotFound):
        return f"{error}. Use `/list` to see this server's announcements."
    if refused_write(error):
        # The store has logged why, once; the member can only wait for the operator.
        return REFUSED_WRITE
    return None


def unexpected_answer(error: BaseException, where: str) -> str:
    """The answer to an error no answer is written for (:func:`expected_answer` gave none):
    it is logged with its traceback, ``where`` it happened (``command schedule``,
    ``dashboard POST /g/1/new``) and a new error id, and answered with that id only (never
    a traceback)."""
    error_id = uuid.uuid4().hex[:8]
    log.error("%s failed (error id %s)", where, error_id, exc_info=error)
    return f"Something went wrong on my side (error id `{error_id}`). Nothing was saved."
