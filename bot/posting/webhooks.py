"""Posting as the community: an occurrence posted through a webhook of its channel, under the
announcement's ``as_name`` and ``as_avatar``, exactly once: the sender beside the normal one
(:meth:`bot.posting.delivery.Delivery.post`).

**The webhook.** One per channel (a thread's parent, a forum), made by the bot once and
reused (``bot_webhooks``, its token a secret: never logged, exported or shown). When none
is stored the channel's webhooks are listed first and one the bot made is adopted (a crash
or a lost answer after a create leaves one behind: it is not made twice); only then is one
made. Its name and avatar are changed only when a post needs other ones. One deleted by a
moderator (10015) is forgotten and made again, in the same attempt (Discord did nothing
with the refused request). A channel with 15 webhooks already (30007) or without Manage
Webhooks (50013) fails the occurrence, said in words.

**Exactly once, with no nonce.** An execute takes none, so:

1. the intent is recorded first: the transaction that begins the occurrence's first
   attempt writes its ``bot_webhook_posts`` row (with ``after_id``, a snowflake a little
   before it), and right before each execute its webhook, thread and ``mark`` (a digest of
   the text it sends) are written;
2. the execute waits for the message (``wait=true``) and is made once: never retried by a
   library (:mod:`bot.posting.webhook_http`);
3. a re-run of an interrupted attempt (a crash, a timeout, a 5xx, a lost answer) first
   looks, over REST, among the messages of that place since ``after_id`` (a forum: its
   posts, active and archived) for one by that webhook, showing the mark (or what this
   attempt would send), that no occurrence recorded: found, it is the post, recorded and
   never sent again. Only if there is none is the execute made again.

A re-run whose first attempt went the normal way (the announcement was given a name to
post as since) goes on the normal way, with its nonce; one whose webhook post is not found
and whose announcement posts as the bot again is sent the normal way too (no nonce of it
was ever used). Edits of a post made this way go through the same webhook
(``PATCH /webhooks/{id}/{token}/messages/{id}``).
"""

from __future__ import annotations

import base64
import hashlib
import logging
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import discord
from discord.http import MultipartParameters, handle_message_parameters
from discord.utils import MISSING

from ..db import BotDb, ChannelWebhook
from ..models import Destination, PostAs
from .failures import RequestFailed
from .forums import ARCHIVED_LOOKED_AT, forum_of

if TYPE_CHECKING:
    from scheduler import ActionContext, TransactionContext

    from ..announcements import Announcement, Announcements
    from ..db import WebhookPost
    from ..metrics import BotStats
    from .payload import PostPayload
    from .poster import Poster
    from .webhook_http import WebhookRequests

__all__ = [
    "LOOKED_AT",
    "MAX_WEBHOOKS",
    "MISSING_PERMISSIONS",
    "NO_MANAGE_WEBHOOKS",
    "UNKNOWN_WEBHOOK",
    "WEBHOOKS_FULL",
    "WEBHOOK_GONE",
    "Posted",
    "WebhookSender",
    "WebhookTarget",
    "extra_key",
    "mark_of",
]

log = logging.getLogger("crier.delivery")  # tests and operators filter on this name

UNKNOWN_WEBHOOK = 10015
MAX_WEBHOOKS, MISSING_PERMISSIONS = 30007, 50013
WEBHOOKS_FULL = (
    "the channel already has 15 webhooks, the most Discord allows: delete one it no longer "
    "needs, or post as the bot (`as_name: none`)"
)
"""Why a post as someone failed in a channel with 15 webhooks (30007), as recorded."""
NO_MANAGE_WEBHOOKS = (
    "the bot needs Manage Webhooks in the channel to post as someone else (or `as_name: none`)"
)
"""Why a post as someone failed without Manage Webhooks (50013), as recorded."""
WEBHOOK_GONE = "the webhook that posted it was deleted: it can no longer be edited"
LOOKED_AT = 100
"""How many of a place's messages since the first attempt a re-run looks at (one request):
a re-run comes within minutes of its first attempt (``begin_attempt``'s nonce window)."""
AFTER_SLACK = 300.0
"""Seconds before the first attempt the look-up starts (Discord's clock and ours may differ
by that much)."""


def extra_key(extra_id: int) -> float:
    """The key an extra post (``/postnow``) has among an announcement's posts through a
    webhook, where an occurrence's is its time: below zero, never an occurrence's."""
    return -float(extra_id)


def mark_of(content: str | None, embed: discord.Embed | None) -> str:
    """A digest of what a post shows (its text, its embed's title and text), the same for
    what is sent and for the message Discord keeps of it."""
    parts = [content or ""]
    if embed is not None:
        parts += [embed.title or "", embed.description or ""]
    text = "\x1f".join(p.strip() for p in parts)
    return hashlib.blake2b(text.encode(), digest_size=10).hexdigest()


def persona_of(post_as: PostAs) -> str:
    """A digest of a webhook's name and avatar."""
    digest = hashlib.blake2b(post_as.name.encode(), digest_size=10)
    if post_as.avatar is not None:
        digest.update(post_as.avatar.data)
    return digest.hexdigest()


def avatar_uri(post_as: PostAs) -> str | None:
    """The avatar as Discord takes it (a data URI), or None."""
    avatar = post_as.avatar
    if avatar is None:
        return None
    kind = avatar.content_type or "image/png"
    return f"data:{kind};base64,{base64.b64encode(avatar.data).decode()}"


@dataclass(frozen=True, slots=True)
class Posted:
    """An occurrence posted through a webhook: its message, the thread it is in (a thread,
    a forum post; None: the webhook's channel), and whether it is one found from an
    earlier attempt that shows something else than this one would (an edit came
    between): it is then brought up to date."""

    message_id: int
    thread_id: int | None
    stale: bool = False


class WebhookSender:
    """Posts and edits occurrences through the webhook of their channel."""

    def __init__(
        self,
        poster: Poster,
        announcements: Announcements,
        requests: WebhookRequests,
        *,
        stats: BotStats,
    ) -> None:
        self.poster = poster
        self.announcements = announcements
        self.requests = requests
        self.stats = stats

    @property
    def client(self) -> discord.Client:
        return self.poster.client

    async def begin(self, tx: TransactionContext, ann: Announcement, fire_ts: float) -> None:
        """In the transaction that begins the occurrence's first attempt: it goes through a
        webhook (recorded before anything is sent)."""
        # Discord's clock (a snowflake's time), not the scheduler's: the wall clock.
        after = discord.utils.time_snowflake(datetime.fromtimestamp(time.time() - AFTER_SLACK, UTC))
        await BotDb(tx.db).begin_webhook_post(ann.id, fire_ts, ann.channel_id, ann.guild_id, after)

    async def post(
        self,
        ctx: ActionContext,
        ann: Announcement,
        fire_ts: float,
        payload: PostPayload,
        *,
        again: bool,
        post_as: PostAs | None,
    ) -> Posted | None:
        """Post the occurrence through the webhook, once; None when it goes the normal way
        (its first attempt did, or it posts as the bot again and no webhook post of it is
        found)."""
        async with self.announcements.sched.reader() as db:
            intent = await BotDb(db).webhook_post(ann.id, fire_ts, ann.channel_id)
        if intent is None:
            return None
        mark = mark_of(payload.content, payload.embed)
        if again and intent.webhook_id is not None:
            found = await self._look_up(ann, intent, mark)
            if found is not None:
                log.info(
                    "announcement %d: found message %d posted through webhook %d earlier",
                    ann.id, found.message_id, intent.webhook_id,
                )  # fmt: skip
                return found
        if post_as is None:
            return None
        return await self._execute(ctx, ann, fire_ts, payload, post_as, mark)

    async def in_place(self, ann: Announcement, channel_id: int) -> Announcement:
        """``ann`` as it posts in another of its places (``also_in``: a channel or a
        thread), for :meth:`begin` and :meth:`post` there (its intent is the place's own)."""
        found: Any = self.client.get_channel(channel_id)
        if found is None:
            found = await self.client.fetch_channel(channel_id)
        kind = Destination.THREAD if isinstance(found, discord.Thread) else Destination.TEXT
        return replace(ann, channel_id=channel_id, rich=replace(ann.rich, destination=kind))

    # --- the execute ---------------------------------------------------------------------

    async def _execute(
        self,
        ctx: ActionContext,
        ann: Announcement,
        fire_ts: float,
        payload: PostPayload,
        post_as: PostAs,
        mark: str,
    ) -> Posted:
        parent = await self._parent(ann)
        hook = await self._webhook(ctx, ann.guild_id, parent, post_as)
        try:
            made = await self._execute_once(ctx, ann, fire_ts, payload, post_as, mark, hook)
        except discord.NotFound as gone:
            if gone.code != UNKNOWN_WEBHOOK:
                raise
            # Deleted meanwhile (Discord did nothing with the refused execute): made again.
            await self._forget(ctx, parent, hook)
            hook = await self._webhook(ctx, ann.guild_id, parent, post_as)
            made = await self._execute_once(ctx, ann, fire_ts, payload, post_as, mark, hook)
        return made

    async def _execute_once(
        self,
        ctx: ActionContext,
        ann: Announcement,
        fire_ts: float,
        payload: PostPayload,
        post_as: PostAs,
        mark: str,
        hook: ChannelWebhook,
    ) -> Posted:
        """Record through which webhook, where and showing what, then execute it once."""
        thread = ann.channel_id if ann.rich.destination == Destination.THREAD else None

        async def note(tx: TransactionContext, _: object) -> None:
            await BotDb(tx.db).note_webhook_execute(
                ann.id, fire_ts, ann.channel_id,
                webhook_id=hook.webhook_id, where_id=thread, mark=mark,
            )  # fmt: skip

        await ctx.run_mutation(note)
        components = payload.view() is not None
        with self._execute_params(ann, payload, post_as) as params:
            made = await self.poster.request(
                ctx,
                lambda: self.requests.execute(
                    hook, params, thread_id=thread, components=components
                ),
                before="send",
            )
        message_id = int(made["id"])
        if ann.rich.destination == Destination.FORUM:  # the new post's thread
            thread = int(made.get("channel_id") or message_id)
        return Posted(message_id, thread)

    def _execute_params(
        self, ann: Announcement, payload: PostPayload, post_as: PostAs
    ) -> MultipartParameters:
        forum = ann.rich.destination == Destination.FORUM
        view = payload.view()
        return handle_message_parameters(
            content=payload.content,
            username=post_as.name,
            files=payload.files(),
            embed=payload.embed if payload.embed is not None else MISSING,
            view=view if view is not None else MISSING,
            allowed_mentions=payload.allowed_mentions,
            flags=discord.MessageFlags(suppress_notifications=True) if payload.silent else MISSING,
            thread_name=(ann.rich.title or "Announcement") if forum else MISSING,
            applied_tags=[str(t) for t in ann.rich.tags] if forum and ann.rich.tags else MISSING,
        )

    # --- the channel's webhook -----------------------------------------------------------

    async def _parent(self, ann: Announcement) -> int:
        """The channel whose webhook posts for ``ann`` (a thread's parent)."""
        if ann.rich.destination != Destination.THREAD:
            return ann.channel_id
        found: Any = self.client.get_channel(ann.channel_id)
        if found is None:
            found = await self.client.fetch_channel(ann.channel_id)
        parent = getattr(found, "parent_id", None)
        if parent is None:
            raise TypeError(f"channel {ann.channel_id} is not a thread")
        return int(parent)

    async def _webhook(
        self, ctx: ActionContext, guild_id: int, channel_id: int, post_as: PostAs
    ) -> ChannelWebhook:
        """The channel's webhook, under ``post_as``'s name and avatar: the stored one, else
        one the bot made there before (listed), else a new one."""
        async with self.announcements.sched.reader() as db:
            hook = await BotDb(db).channel_webhook(channel_id)
        persona = persona_of(post_as)
        if hook is None:
            hook = await self._adopt_or_make(ctx, channel_id, post_as, persona)
            await ctx.run_mutation(lambda tx, _: BotDb(tx.db).save_channel_webhook(hook, guild_id))
        if hook.persona == persona:
            return hook
        try:
            await self.poster.request(
                ctx,
                lambda: self.requests.modify(hook.webhook_id, post_as.name, avatar_uri(post_as)),
                before="webhook",
            )
        except discord.NotFound as gone:
            if gone.code != UNKNOWN_WEBHOOK:
                raise
            await self._forget(ctx, channel_id, hook)
            return await self._webhook(ctx, guild_id, channel_id, post_as)
        await ctx.run_mutation(
            lambda tx, _: BotDb(tx.db).set_webhook_persona(channel_id, hook.webhook_id, persona)
        )
        return ChannelWebhook(hook.channel_id, hook.webhook_id, hook.token, persona)

    async def _adopt_or_make(
        self, ctx: ActionContext, channel_id: int, post_as: PostAs, persona: str
    ) -> ChannelWebhook:
        me = self.client.user
        try:
            listed = await self.poster.request(
                ctx, lambda: self.requests.channel_webhooks(channel_id), before="webhook"
            )
        except discord.Forbidden as refused:
            raise _said(refused) from refused
        mine = sorted(
            (
                h
                for h in listed
                if h.get("token")
                and me is not None
                and str((h.get("user") or {}).get("id")) == str(me.id)
            ),
            key=lambda h: int(h["id"]),
        )
        if mine:
            log.info("channel %d: using webhook %s the bot made earlier", channel_id, mine[0]["id"])
            return ChannelWebhook(channel_id, int(mine[0]["id"]), str(mine[0]["token"]), None)
        try:
            made = await self.poster.request(
                ctx,
                lambda: self.requests.create(channel_id, post_as.name, avatar_uri(post_as)),
                before="webhook",
            )
        except discord.HTTPException as refused:
            raise _said(refused) from refused
        log.info("channel %d: made webhook %s to post through", channel_id, made.get("id"))
        return ChannelWebhook(channel_id, int(made["id"]), str(made["token"]), persona)

    async def _forget(self, ctx: ActionContext, channel_id: int, hook: ChannelWebhook) -> None:
        log.warning(
            "channel %d: webhook %d was deleted; making another one", channel_id, hook.webhook_id
        )
        await ctx.run_mutation(
            lambda tx, _: BotDb(tx.db).forget_channel_webhook(channel_id, hook.webhook_id)
        )

    # --- the look-up before a re-send ----------------------------------------------------

    async def _look_up(self, ann: Announcement, intent: WebhookPost, mark: str) -> Posted | None:
        """The post an interrupted attempt made through the webhook, or None (see the
        module's docstring)."""
        webhook_id = intent.webhook_id
        if webhook_id is None:
            return None
        if ann.rich.destination == Destination.FORUM:
            return await self._find_forum_post(ann, intent, webhook_id)
        where = intent.where_id if intent.where_id is not None else ann.channel_id
        channel = self.client.get_partial_messageable(where)
        candidates = [
            m
            async for m in channel.history(
                limit=LOOKED_AT, after=discord.Object(intent.after_id), oldest_first=True
            )
            if m.webhook_id == webhook_id
        ]
        marks = {intent.mark, mark}
        shown = {m.id: mark_of(m.content, m.embeds[0] if m.embeds else None) for m in candidates}
        candidates = [m for m in candidates if shown[m.id] in marks]
        if not candidates:
            return None
        async with self.announcements.sched.reader() as db:
            taken = await BotDb(db).recorded_messages([m.id for m in candidates])
        for m in candidates:
            if m.id not in taken:
                thread = intent.where_id
                return Posted(m.id, thread, stale=shown[m.id] != mark)
        return None

    async def _find_forum_post(
        self, ann: Announcement, intent: WebhookPost, webhook_id: int
    ) -> Posted | None:
        """A post of the forum (active, or archived since) the webhook started after the
        first attempt began that no occurrence recorded (the oldest)."""
        forum = await forum_of(self.client, ann.channel_id)
        threads = [t for t in await forum.guild.active_threads() if t.parent_id == forum.id]
        try:
            threads += [t async for t in forum.archived_threads(limit=ARCHIVED_LOOKED_AT)]
        except discord.Forbidden:
            log.warning(
                "announcement %d: can't list the archived posts of forum %d (the bot needs "
                "Read Message History there); looking among its active posts only",
                ann.id, forum.id,
            )  # fmt: skip
        candidates = sorted(
            {t.id for t in threads if t.owner_id == webhook_id and t.id > intent.after_id}
        )
        if not candidates:
            return None
        async with self.announcements.sched.reader() as db:
            taken = await BotDb(db).recorded_messages(candidates)
        free = [c for c in candidates if c not in taken]
        return Posted(free[0], free[0]) if free else None

    # --- edits in place ------------------------------------------------------------------

    async def target(self, message_id: int) -> WebhookTarget | None:
        """Where an edit of ``message_id`` goes when it was posted through a webhook (None:
        it was not)."""
        async with self.announcements.sched.reader() as db:
            rows = BotDb(db)
            found = await rows.webhook_message(message_id)
            if found is None:
                return None
            webhook_id, thread = found
            hook = await rows.webhook_by_id(webhook_id)
        return WebhookTarget(message_id, hook, thread)

    async def edit(self, target: WebhookTarget, payload: PostPayload) -> None:
        """Replace what the message shows (text, embed, files) through its webhook; one no
        longer there (deleted, whether the bot made another one since or not) fails for
        good."""
        hook = target.hook
        if hook is None:
            raise RequestFailed(f"{WEBHOOK_GONE} ({UNKNOWN_WEBHOOK})", permanent=True)
        try:
            await self._edit(hook, target, payload)
        except discord.NotFound as gone:
            if gone.code != UNKNOWN_WEBHOOK:
                raise
            raise RequestFailed(f"{WEBHOOK_GONE} ({UNKNOWN_WEBHOOK})", permanent=True) from gone

    async def delete(self, target: WebhookTarget) -> bool:
        """Delete the message through its webhook (no Manage Messages needed: it is the
        webhook's own); False when the webhook is gone (the caller deletes it as the bot)."""
        if target.hook is None:
            return False
        try:
            await self.requests.delete(target.hook, target.message_id, thread_id=target.thread_id)
        except discord.NotFound as gone:
            if gone.code != UNKNOWN_WEBHOOK:
                raise
            return False
        return True

    async def _edit(
        self, hook: ChannelWebhook, target: WebhookTarget, payload: PostPayload
    ) -> None:
        options = payload.edit_options()
        with handle_message_parameters(
            content=options["content"],
            embeds=options["embeds"],
            attachments=options["attachments"],
            allowed_mentions=options["allowed_mentions"],
        ) as params:
            await self.requests.edit(
                hook, target.message_id, params, thread_id=target.thread_id, components=False
            )


@dataclass(frozen=True, slots=True)
class WebhookTarget:
    """A message posted through a webhook: the webhook as stored now (None: it was deleted
    since, and the bot's new one can't edit it), and the thread it is in."""

    message_id: int
    hook: ChannelWebhook | None
    thread_id: int | None


def _said(refused: discord.HTTPException) -> Exception:
    """A refusal to list or make the channel's webhook, in words when it is one a manager
    must act on (15 webhooks already, no Manage Webhooks); else as it came."""
    if refused.code == MAX_WEBHOOKS:
        return RequestFailed(f"{WEBHOOKS_FULL} ({MAX_WEBHOOKS})", permanent=True, code=MAX_WEBHOOKS)
    if refused.code == MISSING_PERMISSIONS:
        return RequestFailed(
            f"{NO_MANAGE_WEBHOOKS} ({MISSING_PERMISSIONS})",
            permanent=True,
            code=MISSING_PERMISSIONS,
        )
    return refused
