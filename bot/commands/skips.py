"""/skip and /unskip: exceptions to a repeating announcement's rule (managers).

``/skip id:`` skips the next occurrence; ``date:`` names any coming one by its local date and
time (read like ``when``; a date alone is every occurrence of that day); ``from:`` and
``to:`` a range, both ends included. ``/unskip`` takes the same and brings the occurrences
back. The dates are read in the announcement's own zone. The skips are part of the rule the
scheduler fires from (:mod:`bot.announcements.skipping`).
"""

from __future__ import annotations

import logging
from datetime import date, datetime

import discord
from discord import app_commands

from ..i18n import t
from ..limits import MAX_TEXT_OPTION
from ..parsing import InputError, concerning, resolve_timezone
from ..parsing.skips import Skip
from ..parsing.when import parse_day_or_time
from ..render import skipped, unskipped
from .autocomplete import announcement_ids
from .replies import AnswersErrors, reply
from .transformers import AnnouncementId

log = logging.getLogger(__name__)

SKIPS_COG = "Skips"

Text = app_commands.Range[str, 1, MAX_TEXT_OPTION]


class SkipCommands(AnswersErrors, name=SKIPS_COG):
    """/skip and /unskip (guild only, managers who can read the announcement)."""

    async def _span(
        self,
        interaction: discord.Interaction,
        local_id: int,
        day: str | None,
        start: str | None,
        end: str | None,
        *,
        required: bool,
    ) -> tuple[int, int, Skip | None]:
        """The guild's and the member's ids, and the span the options name (None: none named,
        when ``required`` is false), read in the announcement's zone."""
        who = await self.reader(interaction, local_id)
        a = await self.announcements.get(who.guild.id, local_id)
        zone = resolve_timezone(a.timezone)
        now = self.clock.now()
        locale = who.locale

        def read(field: str, text: str) -> date | datetime:
            with concerning(field):
                return parse_day_or_time(text, zone, now, locale=locale)

        if day is not None and (start is not None or end is not None):
            raise InputError(
                t("Give either `date`, or `from` and `to`, not both: `date` names one day "
                  "or time, `from` and `to` a range.")
            )  # fmt: skip
        if day is not None:
            found = read("date", day)
            span = Skip.minute(found) if isinstance(found, datetime) else Skip.day(found)
            return who.guild.id, who.member.id, span
        if start is None and end is None:
            if required:
                raise InputError(t("Say which date to take back: `date`, or `from` and `to`."))
            return who.guild.id, who.member.id, None
        if start is None or end is None:
            raise InputError(
                t("A range needs both ends: `from` and `to` (both included), like `from: "
                  "2026-12-24 to: 2027-01-02`.")
            )  # fmt: skip
        lo, hi = read("from", start), read("to", end)
        if _day(hi) < _day(lo) or (
            isinstance(lo, datetime) and isinstance(hi, datetime) and hi < lo
        ):
            raise InputError(
                t("`to` ({to}) comes before `from` ({start}): the range runs from `from` to "
                  "`to`, both included.", to=end, start=start),
                field="to",
            )  # fmt: skip
        return who.guild.id, who.member.id, Skip.between(lo, hi)

    @app_commands.command(
        name="skip",
        description="Skip occurrences of a repeating announcement (the next one, a date, a range)",
    )
    @app_commands.guild_only()
    @app_commands.describe(
        id="The announcement's number (see /list)",
        date="An occurrence to skip: 2026-12-25 18:00, or a date alone for that whole day",
        from_="The first day or time of a range to skip (with `to`)",
        to="The last day or time of the range (included)",
    )
    @app_commands.rename(from_="from")
    @app_commands.autocomplete(id=announcement_ids("skip"))
    async def skip(
        self,
        interaction: discord.Interaction,
        id: AnnouncementId,
        date: Text | None = None,
        from_: Text | None = None,
        to: Text | None = None,
    ) -> None:
        guild_id, member_id, span = await self._span(
            interaction, id, date, from_, to, required=False
        )
        done = await self.announcements.skip(guild_id, id, member_id, span)
        log.info(
            "announcement %d (#%d): %d occurrence(s) from %s skipped by %d",
            done.announcement.id, id, done.count, done.skipped.isoformat(), member_id,
        )  # fmt: skip
        await reply(interaction, skipped(done))

    @app_commands.command(
        name="unskip", description="Take back a skip: the occurrences of that date post again"
    )
    @app_commands.guild_only()
    @app_commands.describe(
        id="The announcement's number (see /list)",
        date="The skipped date (or date and time) to post again",
        from_="The first day or time of a range to take back (with `to`)",
        to="The last day or time of the range (included)",
    )
    @app_commands.rename(from_="from")
    @app_commands.autocomplete(id=announcement_ids("unskip"))
    async def unskip(
        self,
        interaction: discord.Interaction,
        id: AnnouncementId,
        date: Text | None = None,
        from_: Text | None = None,
        to: Text | None = None,
    ) -> None:
        guild_id, member_id, span = await self._span(
            interaction, id, date, from_, to, required=True
        )
        if span is None:
            raise RuntimeError("a span is required")
        done = await self.announcements.unskip(guild_id, id, member_id, span)
        log.info(
            "announcement %d (#%d): skips in %s – %s taken back by %d",
            done.announcement.id, id, span.start.isoformat(), span.end.isoformat(), member_id,
        )  # fmt: skip
        await reply(interaction, unskipped(done))


def _day(value: date | datetime) -> date:
    return value.date() if isinstance(value, datetime) else value
