"""Who may do what, decided by the bot (never only by Discord's UI), from the member and the
server the request was built with at the door: the manager rule, who may read an
announcement's text, and what it may ping."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import discord
from discord import app_commands

from ..i18n import t, tn
from ..parsing import ConcernsField

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..announcements import Announcement, GuildSettings

ROLE_MENTION = re.compile(r"<@&(\d{15,22})>")
EVERYONE_TEXT = re.compile(r"@(everyone|here)\b")


class Refusal(ConcernsField, app_commands.AppCommandError):
    """The request is refused; ``str(e)`` says why (shown to the member, ephemerally).
    ``field``: the option it is about, when one is (:class:`~bot.parsing.ConcernsField`).

    An app-command error, so that a command check may raise it too."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def is_manager(member: discord.Member, settings: GuildSettings) -> bool:
    """Manage Server (or Administrator), or the guild's configured manager role."""
    perms = member.guild_permissions
    if perms.administrator or perms.manage_guild:
        return True
    return settings.manager_role_id is not None and any(
        r.id == settings.manager_role_id for r in member.roles
    )


def require_manager(member: discord.Member, settings: GuildSettings) -> None:
    """Refused (:class:`Refusal`, naming the manager role if the server has one) unless
    ``member`` is a manager (:func:`is_manager`)."""
    if not is_manager(member, settings):
        if settings.manager_role_id:
            raise Refusal(
                t("You need the **Manage Server** permission or the {role} role to manage "
                  "announcements.", role=f"<@&{settings.manager_role_id}>")
            )  # fmt: skip
        raise Refusal(t("You need the **Manage Server** permission to manage announcements."))


def can_read(member: discord.Member, guild: discord.Guild, channel_id: int) -> bool:
    """Whether ``member`` may read the text of an announcement meant for that channel: only
    if they can view it (Discord would never show them a message there); for a channel no
    longer in the server, only if they manage the server."""
    channel = guild.get_channel_or_thread(channel_id)
    if channel is None:
        perms = member.guild_permissions
        return perms.administrator or perms.manage_guild
    return channel.permissions_for(member).view_channel


def require_readable(member: discord.Member, guild: discord.Guild, a: Announcement) -> None:
    """Refused unless ``member`` may read announcement ``a``'s text (:func:`can_read`): a
    member changes or copies (edits, saves as a template, pauses, resumes, skips, cancels)
    only an announcement they could read; one for a channel they can't see shows them its
    times and state, never its text."""
    if not can_read(member, guild, a.channel_id):
        raise Refusal(
            t("Announcement #{id} is for a channel you can't see, so you can't change or copy "
              "it.", id=a.local_id)
        )  # fmt: skip


def require_reads_every(
    member: discord.Member, guild: discord.Guild, live: Iterable[Announcement]
) -> None:
    """Refused unless ``member`` may read the text of every one of ``live`` (the server's
    scheduled and paused announcements): the calendar's address shows them all to whoever
    has it, so it is given only to a manager who could read each of them."""
    hidden = [a.local_id for a in live if not can_read(member, guild, a.channel_id)]
    if hidden:
        raise Refusal(
            tn("The calendar shows every scheduled announcement of this server to whoever "
               "has its address, and {count} of them is for a channel you can't see: ask a "
               "manager who can see them all.",
               "The calendar shows every scheduled announcement of this server to whoever "
               "has its address, and {count} of them are for channels you can't see: ask a "
               "manager who can see them all.",
               len(hidden), count=len(hidden))
        )  # fmt: skip


def hidden_channels(
    member: discord.Member, guild: discord.Guild, channel_ids: Iterable[int]
) -> set[int]:
    """Those of ``channel_ids`` whose announcements' text ``member`` may not read
    (:func:`can_read`)."""
    return {c for c in channel_ids if not can_read(member, guild, c)}


@dataclass(slots=True)
class MentionPlan:
    """What may ping, fixed at scheduling time from the member's rights then."""

    mention: str | None = None
    allowed: dict[str, Any] = field(
        default_factory=lambda: {"everyone": False, "roles": [], "users": True}
    )
    notes: list[str] = field(default_factory=list)


def plan_mentions(
    member: discord.Member,
    me: discord.Member,
    channel: discord.TextChannel | discord.Thread | discord.ForumChannel,
    role: discord.Role | None,
    content: str,
) -> MentionPlan:
    """Decide what the announcement may ping. An explicit ``mention`` the member may not use
    is refused; mentions typed in the text that the member may not use stay as text."""
    plan = MentionPlan()
    mine = channel.permissions_for(member)
    bots = channel.permissions_for(me)
    can_everyone = mine.mention_everyone and bots.mention_everyone

    if role is not None:
        if role.is_default():
            if not mine.mention_everyone:
                raise Refusal(
                    t("You don't have **Mention @everyone** in {channel}, so you can't "
                      "schedule an @everyone ping there.", channel=channel.mention)
                )  # fmt: skip
            if not bots.mention_everyone:
                raise Refusal(
                    t("I need **Mention @everyone** in {channel} to ping @everyone there.",
                      channel=channel.mention)
                )  # fmt: skip
            plan.mention = "everyone"
            plan.allowed["everyone"] = True
        else:
            if not (role.mentionable or mine.mention_everyone):
                raise Refusal(
                    t("{role} can't be mentioned by you (it isn't mentionable and you don't "
                      "have **Mention @everyone, @here and All Roles**).", role=role.mention)
                )  # fmt: skip
            if not (role.mentionable or bots.mention_everyone):
                raise Refusal(
                    t("I can't ping {role}: make the role mentionable or give me **Mention "
                      "@everyone, @here and All Roles**.", role=role.mention)
                )  # fmt: skip
            plan.mention = f"role:{role.id}"
            plan.allowed["roles"].append(str(role.id))

    if EVERYONE_TEXT.search(content):
        if can_everyone:
            plan.allowed["everyone"] = True
        else:
            plan.notes.append(t("@everyone/@here in the text will show but not ping anyone."))
    guild = channel.guild
    for match in ROLE_MENTION.finditer(content):
        found = guild.get_role(int(match[1]))
        if found is None:
            continue
        if (found.mentionable or mine.mention_everyone) and (
            found.mentionable or bots.mention_everyone
        ):
            if str(found.id) not in plan.allowed["roles"]:
                plan.allowed["roles"].append(str(found.id))
        else:
            plan.notes.append(t("{role} in the text will show but not ping.", role=found.mention))
    return plan
