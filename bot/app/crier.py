"""The bot process: settings, logging, the Discord client, the scheduler, and their lifecycle."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import signal
import sqlite3
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp
import discord
from discord.ext import commands

from scheduler import (
    Clock,
    MigrationSet,
    Registry,
    Scheduler,
    Store,
    StoreError,
    StoreMisconfigured,
    SystemClock,
)
from scheduler.migrations import packaged
from scheduler.stores.sqlite import refused_write

from ..announcements import Announcements
from ..announcements.retention import Retention
from ..commands.calendar import CalendarCommands
from ..commands.copy import CopyCommands
from ..commands.edit import EditCommands
from ..commands.info import InfoCommands
from ..commands.lifecycle import LifecycleCommands
from ..commands.once import quiet_lost_autocompletes
from ..commands.posting import PostingCommands
from ..commands.reminders import RemindButton, ReminderCommands, StopButton
from ..commands.schedule import AnnouncementCommands, CommandTree
from ..commands.skips import SkipCommands
from ..commands.style import StyleCommands
from ..commands.templates import TemplateCommands
from ..commands.transfer import ConfirmImport, TransferCommands
from ..commands.translator import CatalogTranslator
from ..commands.views import PageButton
from ..config import ConfigError, Settings, load_settings, without_password
from ..db import BotDb
from ..metrics import BotStats
from ..models import Limits
from ..posting.crosspost import Crossposter
from ..posting.delivery import Delivery
from ..posting.events import EventSync
from ..posting.extra import ExtraPosting
from ..posting.lease import lease_needed
from ..posting.log_channel import LogChannel, Reporter
from ..posting.once import keep_out_of_library_retries
from ..posting.pacer import ChannelPacer
from ..posting.places import PlaceDelivery, PlaceUpdates
from ..posting.poster import Poster
from ..posting.publishing import Publisher
from ..posting.reminders import Reminding
from ..posting.tidy import Tidying
from ..posting.updates import PostUpdates
from ..posting.webhook_http import WebhookRequests
from ..posting.webhooks import WebhookSender
from ..requests.destinations import every_destination_permissions
from ..web.calendar import CalendarFeeds
from ..web.server import WebServer
from .endpoints import use_discord_endpoints
from .shards import GatewayInfo, Shards
from .start import CONFIG_ERROR, fatal
from .waiting import DatabaseWait

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from ..web.dashboard import Dashboard

log = logging.getLogger(__name__)


def bot_migrations() -> MigrationSet:
    return packaged("bot", "crier", "bot")


def make_store(settings: Settings) -> Store:
    kind, where = settings.database
    if kind == "postgres":
        from scheduler.stores.postgres import PostgresStore

        return PostgresStore(where)
    from scheduler import SqliteStore

    return SqliteStore(Path(where))


def guild_limits(settings: Settings) -> Limits:
    """The limits of every server (unless an operator set otherwise for one)."""
    return Limits(
        max_announcements=settings.max_announcements,
        max_templates=settings.max_templates,
        files_max_bytes=settings.guild_files_max_bytes,
        min_repeat_seconds=settings.min_repeat,
        commands_per_minute=settings.commands_per_minute,
    )


class RedactingFormatter(logging.Formatter):
    """Never lets the token (nor the OAuth2 client secret, ``others``) reach a log line,
    whatever logged it."""

    def __init__(self, secret: str, fmt: str, *, others: Sequence[str | None] = ()) -> None:
        super().__init__(fmt)
        self._secret = secret
        self._others = [s for s in others if s]

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        text = text.replace(self._secret, "[token]") if self._secret else text
        for other in self._others:
            text = text.replace(other, "[secret]")
        return text


class RefusedWriteFilter(logging.Filter):
    """Drops records about a write the database's disk refused (full, or over a file size
    limit). The store says so in one line when writes start to be refused, with the reason,
    and in one more when they work again; in between, every retry of the scheduler's loops
    and of a delivery's bookkeeping fails the same way, and logging each one (most with a
    traceback) would bury that line under copies of it."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and refused_write(record.exc_info[1]):
            return False
        args = record.args if isinstance(record.args, tuple) else ()
        return not any(isinstance(a, BaseException) and refused_write(a) for a in args)


def setup_logging(settings: Settings) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        RedactingFormatter(
            settings.token,
            "%(asctime)s %(levelname)-7s %(name)s: %(message)s",
            others=(settings.client_secret,),
        )
    )
    handler.addFilter(RefusedWriteFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.log_level)
    logging.getLogger("discord").setLevel(max(logging.INFO, root.level))
    # "logging in using static token" on every start is noise, and a rejected token must
    # come out as one clear line of ours.
    if root.level > logging.DEBUG:
        logging.getLogger("discord.client").setLevel(logging.WARNING)


MAX_RATELIMIT_WAIT = 30.0
"""The longest 429 discord.py waits out itself; a longer one raises ``RateLimited``."""


UNCLAIMED_INTERACTION = 2.0
"""Seconds after which an interaction no handler of this client took up is not waited for."""


class CrierBot(commands.Bot):
    """A Discord client, holding the scheduler-backed services; hosts the commands cog.

    The process has one per gateway shard it runs (``shard=(shard_id, count)``: it receives
    that shard's events and answers its interactions), and one REST-only client (``shard``
    None) that never connects to the gateway: deliveries, command sync and everything not
    tied to a shard go through it, and its look-ups (``get_guild``, ``get_channel``,
    ``guilds``) see the caches of every shard client of the process (``shard_clients``):
    a guild whose shard another instance holds is found over REST instead."""

    def __init__(
        self,
        settings: Settings,
        sched: Scheduler,
        clock: Clock,
        guild_ready_timeout: float = 2.0,
        *,
        stats: BotStats | None = None,
        announcements: Announcements | None = None,
        shard: tuple[int, int] | None = None,
        identify: Callable[[int], Awaitable[None]] | None = None,
        shard_clients: Callable[[], Sequence[discord.Client]] | None = None,
        shards_ready: Callable[[], Awaitable[None]] | None = None,
        web_base: Callable[[], tuple[str, bool] | None] | None = None,
    ) -> None:
        # The bot never joins voice: don't let discord.py warn at every start that voice
        # libraries are missing (a bad token must give one clear line, nothing more).
        discord.VoiceClient.warn_nacl = discord.VoiceClient.warn_dave = False
        quiet_lost_autocompletes()
        self.stats = stats if stats is not None else BotStats()
        super().__init__(
            # Slash commands only: no prefix, so no message (not even one that mentions the
            # bot) is read as a command, and no message-content intent is needed.
            command_prefix=(),
            help_command=None,
            tree_cls=CommandTree,
            intents=discord.Intents.default(),
            allowed_mentions=discord.AllowedMentions.none(),
            guild_ready_timeout=guild_ready_timeout,
            # A long 429 (publishing is limited to about 10 an hour per channel) raises
            # instead of sleeping inside a delivery: the publish step waits as a scheduled
            # retry of its own. Short ones are still waited out by discord.py.
            max_ratelimit_timeout=MAX_RATELIMIT_WAIT,
            # Counts the 429s discord.py waits out, and keeps the requests without a nonce
            # (thread and forum post creation) out of its retries of a 5xx.
            http_trace=keep_out_of_library_retries(self.stats.trace_config()),
            shard_id=None if shard is None else shard[0],
            shard_count=None if shard is None else shard[1],
        )
        self.settings = settings
        self.sched = sched
        self.clock = clock
        self.announcements = announcements or Announcements(
            sched,
            settings.catch_up_window,
            send_spacing=settings.send_spacing,
            file_max_bytes=settings.file_max_bytes,
            limits=guild_limits(settings),
            forget_after=settings.forget_after,
            report_gather=settings.report_gather,
            edit_quiet=settings.edit_quiet,
        )
        self.shard = shard
        self._identify = identify
        self._shard_clients = shard_clients
        self._shards_ready = shards_ready
        self.web_base = web_base or (lambda: None)
        """Where this process's web server is reached (``/calendar``'s address), and whether
        that is its public address; None: it serves none."""
        self.identify_deadline: float | None = None
        """Until when (on ``clock``) the turn this shard's first IDENTIFY waited before
        connecting still holds (see ``ShardSession``); cleared when that IDENTIFY goes."""
        self.interactions_in_flight: dict[int, tuple[float, asyncio.Task[Any] | None]] = {}
        """Interactions this client received and is still handling, by id: when it came
        (``time.monotonic()``) and the task handling it (None until that task starts, see
        :func:`bot.commands.once.take`). A shard handed over waits for them before closing
        its session (:meth:`wait_interactions`)."""
        self.logged_in = asyncio.Event()
        self.synced_commands: bool | None = None

    async def setup_hook(self) -> None:
        await self.add_cog(AnnouncementCommands(self.announcements, self.clock))
        await self.add_cog(LifecycleCommands(self.announcements))
        await self.add_cog(SkipCommands(self.announcements, self.clock))
        await self.add_cog(EditCommands(self.announcements, self.clock))
        await self.add_cog(StyleCommands(self.announcements, self.clock))
        await self.add_cog(InfoCommands(self.announcements))
        await self.add_cog(TemplateCommands(self.announcements))
        await self.add_cog(TransferCommands(self.announcements, self.clock))
        await self.add_cog(ReminderCommands(self.announcements, self.clock))
        copying = CopyCommands(self.announcements, self.clock)
        await self.add_cog(copying)
        self.tree.add_command(copying.menu)
        await self.add_cog(PostingCommands(self.announcements, self.clock))
        await self.add_cog(CalendarCommands(self.announcements, self.clock, web_base=self.web_base))
        self.add_dynamic_items(PageButton, ConfirmImport, RemindButton, StopButton)
        await self.tree.set_translator(CatalogTranslator())
        self.logged_in.set()
        if self.shard is None:  # the commands are synced once, by the REST-only client
            await self.sync_commands()

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        """Every IDENTIFY waits its bucket's turn across the instances (``IdentifyGate``);
        the first one already waited before connecting, and goes if it is still in time
        (connecting took no longer than the gate's margin past the turn)."""
        deadline, self.identify_deadline = self.identify_deadline, None
        if deadline is not None:
            late = self.clock.time() - deadline
            if late <= 0:
                return
            logging.getLogger("crier.shards").info(
                "shard %s connected %.2f s past its IDENTIFY turn's margin: waiting for a new "
                "turn instead of crowding the next one", shard_id, late,
            )  # fmt: skip
        if self._identify is None:
            await super().before_identify_hook(shard_id, initial=initial)
            return
        await self._identify(shard_id or 0)

    def dispatch(self, event_name: str, /, *args: Any, **kwargs: Any) -> None:
        # A shard handed over or lost is closed while its session may still be coming up:
        # discord.py's ready timer would then dispatch to a client whose loop is gone.
        if self.is_closed():
            return
        if event_name == "interaction" and args and isinstance(args[0], discord.Interaction):
            # (dispatched right after discord.py made the task that handles it)
            self.interactions_in_flight.setdefault(args[0].id, (time.monotonic(), None))
        super().dispatch(event_name, *args, **kwargs)

    def handling(self, interaction_id: int, task: asyncio.Task[Any] | None) -> None:
        """``task`` handles interaction ``interaction_id`` (None: it is not acted on); the
        interaction is in flight until the task ends."""
        if task is None:
            self.interactions_in_flight.pop(interaction_id, None)
            return
        self.interactions_in_flight[interaction_id] = (time.monotonic(), task)
        task.add_done_callback(lambda _: self.interactions_in_flight.pop(interaction_id, None))

    async def wait_interactions(self, within: float) -> int:
        """Wait (at most ``within`` seconds) until every interaction this client received is
        handled: a session closed under one would lose its answer, while the other sessions
        that received it stay silent (it was this one's effect). One no handler took up
        within :data:`UNCLAIMED_INTERACTION` seconds (a form another session opened, a
        button of no view here) is not waited for. Returns how many are left."""
        deadline = time.monotonic() + within
        while True:
            now = time.monotonic()
            for key, (came, task) in list(self.interactions_in_flight.items()):
                if task is None and now - came > UNCLAIMED_INTERACTION:
                    del self.interactions_in_flight[key]
            if not self.interactions_in_flight or now >= deadline:
                return len(self.interactions_in_flight)
            tasks = [t for _, t in self.interactions_in_flight.values() if t is not None]
            if len(tasks) == len(self.interactions_in_flight):
                await asyncio.wait(tasks, timeout=deadline - now)
            else:  # one whose handler has not started yet
                await asyncio.sleep(min(0.05, deadline - now))

    async def wait_until_ready(self) -> None:
        """The REST-only client never connects: it is ready once logged in and once the
        shards this process starts first are ready (their caches are what it looks in)."""
        if self.shard is None and self._shard_clients is not None:
            await self.logged_in.wait()
            if self._shards_ready is not None:
                await self._shards_ready()
            return
        await super().wait_until_ready()

    @property
    def guilds(self) -> Sequence[discord.Guild]:
        if self._shard_clients is None:
            return super().guilds
        return [g for c in self._shard_clients() for g in c.guilds]

    def get_channel(self, id: int, /) -> Any:
        if self._shard_clients is None:
            return super().get_channel(id)
        for client in self._shard_clients():
            found = client.get_channel(id)
            if found is not None:
                return found
        return None

    def server_locale(self, guild_id: int) -> str | None:
        """The server's own language (Discord's preferred locale of a community server),
        None while no shard of this process has the server."""
        guild = self.get_guild(guild_id)
        return None if guild is None else str(guild.preferred_locale.value)

    def get_guild(self, id: int, /) -> discord.Guild | None:
        if self._shard_clients is None:
            return super().get_guild(id)
        for client in self._shard_clients():
            found = client.get_guild(id)
            if found is not None:
                return found
        return None

    async def sync_commands(self) -> None:
        """Register the commands with Discord only if their definitions changed since the
        last sync to the same place (a hash is kept in the database)."""
        guild = self.settings.dev_guild_id
        target = f"guild:{guild}" if guild else "global"
        # What sync sends, localizations included: a changed translation is a change.
        translator = self.tree.translator
        payload = json.dumps(
            [
                await c.get_translated_payload(self.tree, translator)
                if translator is not None
                else c.to_dict(self.tree)
                for c in self.tree.get_commands()
            ],
            sort_keys=True,
        )
        digest = hashlib.sha256(payload.encode()).hexdigest()
        key = f"commands:{self.application_id}:{target}"
        async with self.sched.reader() as db:
            synced = await BotDb(db).meta_value(key)
        if synced == digest:
            log.info("slash commands unchanged since the last sync to %s; not syncing", target)
            self.synced_commands = False
            return
        if guild:
            self.tree.copy_global_to(guild=discord.Object(guild))
            try:
                await self.tree.sync(guild=discord.Object(guild))
            except (discord.Forbidden, discord.NotFound) as exc:
                raise ConfigError(
                    f"DEV_GUILD_ID {guild} is not a server the bot is in (Discord: "
                    f"{exc.text or exc}); correct it, or remove it to register commands globally"
                ) from None
        else:
            await self.tree.sync()
        async with self.sched.transaction() as ctx:
            await BotDb(ctx.db).set_meta(key, digest)
        log.info("slash commands synced to %s", target)
        self.synced_commands = True
        await self._unregister_elsewhere(key)

    async def _unregister_elsewhere(self, current: str) -> None:
        """Remove the commands from the places they were synced to before (the global list
        when DEV_GUILD_ID is set now, the dev guild when it no longer is), so no server
        shows every command twice."""
        prefix = f"commands:{self.application_id}:"
        async with self.sched.reader() as db:
            stale = [k for k in await BotDb(db).meta_keys(prefix) if k != current]
        for key in stale:
            where = key[len(prefix) :]
            app_id = self.application_id or 0
            try:
                if where.startswith("guild:"):
                    guild_id = int(where.split(":", 1)[1])
                    await self.http.bulk_upsert_guild_commands(app_id, guild_id, [])
                else:
                    await self.http.bulk_upsert_global_commands(app_id, [])
            except discord.HTTPException as exc:
                log.warning("could not remove the old commands from %s: %s", where, exc)
                continue
            async with self.sched.transaction() as ctx:
                await BotDb(ctx.db).delete_meta(key)
            log.info("removed the slash commands previously synced to %s", where)

    async def on_guild_remove(self, guild: discord.Guild) -> None:
        """Removed from a server, or the server was deleted (not an outage: that is
        ``on_guild_unavailable``): its announcements stop, and it is forgotten later."""
        await self.announcements.guild_left(guild.id)

    async def on_guild_join(self, guild: discord.Guild) -> None:
        """Invited to a server: one that removed the bot before carries on as it was."""
        await self.announcements.guild_returned(guild.id)

    async def on_ready(self) -> None:
        where = f" (shard {self.shard[0]} of {self.shard[1]})" if self.shard else ""
        log.info("connected as %s to %d server(s)%s", self.user, len(self.guilds), where)
        # Servers that invited the bot back while it was not connected are in READY.
        back = await self.announcements.guilds_present([g.id for g in self.guilds])
        if back:
            log.info("back in %d server(s) that had removed the bot", len(back))

    def log_invites(self) -> None:
        app_id = self.application_id or 0
        base = every_destination_permissions()
        pings = base | discord.Permissions(mention_everyone=True)
        scopes = ("bot", "applications.commands")
        log.info("invite: %s", discord.utils.oauth_url(app_id, permissions=base, scopes=scopes))
        log.info(
            "invite (with @everyone and role pings): %s",
            discord.utils.oauth_url(app_id, permissions=pings, scopes=scopes),
        )


class Crier:
    """Everything the bot runs, started and stopped in order."""

    def __init__(
        self,
        settings: Settings,
        *,
        clock: Clock | None = None,
        store: Store | None = None,
        guild_ready_timeout: float = 2.0,
    ) -> None:
        self.settings = settings
        self.clock: Clock = clock or SystemClock()
        self.registry = Registry()
        self.sched = Scheduler(
            store or make_store(settings),
            self.registry,
            clock=self.clock,
            lease=settings.lease,
            sweep_interval=settings.sweep_interval,
            max_concurrency=512,
            migrations=[bot_migrations()],
            process_id=settings.instance_name,
            crons=Retention.crons(),
        )
        self.database = DatabaseWait(self.sched, database_name(settings))
        """Starts the scheduler, waiting for a database that can't be reached yet."""
        self.stats = BotStats()
        """What this process's deliveries, edits and requests did (``/metrics``)."""
        self.guild_ready_timeout = guild_ready_timeout
        self.shards = Shards(
            sched=self.sched,
            clock=self.clock,
            fetch=self._gateway_info,
            make_client=self._shard_client,
            token=settings.token,
            count=settings.shard_count,
            pinned=settings.shard_ids,
            lease=settings.shard_lease,
            identify_interval=settings.identify_interval,
            session_starts_kept=settings.session_starts_kept,
            join_window=settings.shard_join_window,
        )
        """The gateway shards this process runs (see :mod:`bot.app.shards`)."""
        self.bot = CrierBot(
            settings,
            self.sched,
            self.clock,
            guild_ready_timeout,
            stats=self.stats,
            shard_clients=lambda: self.clients,
            shards_ready=self.shards.wait_started,
            web_base=self.web_base,
        )
        """The REST-only client: deliveries, command sync, the dashboard's look-ups."""
        self.bot.announcements.read_server_locales(self.bot.server_locale)
        self.crossposter = Crossposter(
            settings.api_base,
            settings.token,
            user_agent=self.bot.http.user_agent,
            trace=self.stats.trace_config(),
        )
        self.webhook_requests = WebhookRequests(
            settings.api_base,
            settings.token,
            user_agent=self.bot.http.user_agent,
            trace=self.stats.trace_config(),
        )
        """The requests about channel webhooks (posts made as someone)."""
        self._register_posting_jobs()
        self.retention = Retention(self.sched, settings.history_days)
        """The hourly job that deletes what is older than ``HISTORY_DAYS``."""
        self.retention.register(self.registry)
        self.dashboard: Dashboard | None = None
        """The web dashboard, on :attr:`web` when ``DISCORD_CLIENT_SECRET`` is set too."""
        self.web = self._web_server()
        """The HTTP server on ``HTTP_ADDRESS`` (None when it is not set)."""
        if self.web is None and settings.client_secret is not None:
            log.warning(
                "DISCORD_CLIENT_SECRET is set but HTTP_ADDRESS is not: the dashboard is not "
                "served (set HTTP_ADDRESS, e.g. 127.0.0.1:8080)"
            )

    def _shard_client(self, shard_id: int, count: int) -> CrierBot:
        return CrierBot(
            self.settings,
            self.sched,
            self.clock,
            self.guild_ready_timeout,
            stats=self.stats,
            announcements=self.bot.announcements,
            shard=(shard_id, count),
            identify=self.shards.identify,
            web_base=self.web_base,
        )

    async def _gateway_info(self) -> GatewayInfo:
        shards, _, limit = await self.bot.http.get_bot_gateway()
        return shards, {
            "total": limit["total"],
            "remaining": limit["remaining"],
            "reset_after": limit["reset_after"],
            "max_concurrency": limit["max_concurrency"],
        }

    @property
    def clients(self) -> list[CrierBot]:
        """The client of every shard this process runs now, by shard id."""
        return [c for c in self.shards.clients() if isinstance(c, CrierBot)]

    def _register_posting_jobs(self) -> None:
        """The jobs that post (send, update, publish, report), on one guard and one log
        channel."""
        settings, announcements = self.settings, self.bot.announcements
        send_timeout = settings.nonce_window / 3
        # A send that hangs is abandoned well inside the nonce window, so its retry can
        # still be deduplicated by Discord.
        self.poster = poster = Poster(
            self.bot,
            heartbeat_every=max(0.5, settings.lease / 3),
            lease_needed=lease_needed(self.sched, send_timeout),
            send_timeout=send_timeout,
            ready=self.bot.logged_in,
        )
        """The guard of every request that posts (tests stop a run through its
        ``pause_point``)."""
        # Spaces what this process posts to one channel outside a delivery job (log-channel
        # reports, edits of posted messages); deliveries are paced by the scheduler.
        pacer = ChannelPacer(settings.send_spacing, self.clock)
        reporter = Reporter(poster, LogChannel(self.bot, announcements, pacer))
        webhooks = WebhookSender(poster, announcements, self.webhook_requests, stats=self.stats)
        delivery = Delivery(
            poster,
            announcements,
            webhooks,
            catch_up_window=settings.catch_up_window,
            nonce_window=settings.nonce_window,
            publish_spacing=settings.publish_spacing,
            stats=self.stats,
        )
        jobs = (
            delivery,
            ExtraPosting(delivery, nonce_window=settings.nonce_window),
            Tidying(poster, announcements, webhooks),
            PostUpdates(poster, announcements, pacer, webhooks, stats=self.stats),
            PlaceDelivery(delivery, nonce_window=settings.nonce_window, stats=self.stats),
            PlaceUpdates(poster, announcements, pacer, webhooks, stats=self.stats),
            Publisher(
                poster,
                announcements,
                self.crossposter,
                publish_spacing=settings.publish_spacing,
                stats=self.stats,
            ),
            reporter,
            EventSync(poster, announcements, lead=settings.event_lead, ahead=settings.events_ahead),
            Reminding(
                poster,
                announcements,
                spacing=settings.reminder_spacing,
                nonce_window=settings.nonce_window,
                stats=self.stats,
            ),
        )
        for job in jobs:
            job.register(self.registry)
        announcements.register(self.registry)

    def _web_server(self) -> WebServer | None:
        if self.settings.http_address is None:
            return None
        try:
            from ..web.observability import observability_routes
        except ImportError as exc:
            raise ConfigError(
                f"HTTP_ADDRESS serves /metrics, which needs {exc.name or 'prometheus_client'}: "
                "install the bot with its metrics extra (pip install 'crier[metrics]')"
            ) from None
        server = WebServer(*self.settings.http_address, max_body=self.settings.http_max_body)
        waiting = self.database_wait
        server.add_routes(
            observability_routes(self.shards, self.bot, self.sched, self.stats, waiting=waiting)
        )
        server.hold_while(waiting)
        feeds = CalendarFeeds(
            self.bot.announcements,
            self.clock,
            behind_proxy=self.settings.dashboard_url is not None,
            guild_name=self._guild_name,
        )
        server.add_routes(feeds.routes())
        if self.settings.client_secret is not None:
            from ..web.dashboard import add_dashboard

            self.dashboard = add_dashboard(
                server.app,
                announcements=self.bot.announcements,
                sched=self.sched,
                client=self.bot,
                settings=self.settings,
                clock=self.clock,
                gateway=self.shards,
            )
        return server

    def web_base(self) -> tuple[str, bool] | None:
        """Where the web server is reached: ``DASHBOARD_PUBLIC_URL`` (True: public), else
        the address it listens on (False); None: it serves none."""
        if self.web is None:
            return None
        if self.settings.dashboard_url is not None:
            return self.settings.dashboard_url, True
        return self.web.url, False

    def _guild_name(self, guild_id: int) -> str | None:
        """The server's name as a connected client knows it (no request to Discord)."""
        guild = self.bot.get_guild(guild_id)
        return None if guild is None else guild.name

    def database_wait(self) -> str | None:
        """While the start waits for the database: what for and why (``/healthz``)."""
        return self.database.reason

    async def start(self, *, stop: asyncio.Event | None = None) -> bool:
        """Serve ``/healthz``, open the database (waiting while it can't be reached: see
        :mod:`bot.app.waiting`), log in, and connect in the background (returns once ready).
        False, with everything closed, if ``stop`` is set while waiting for the database."""
        # Where discord.py connects (see bot.app.endpoints for why this is process-wide).
        use_discord_endpoints(self.settings.api_base, self.settings.gateway_url)
        try:
            if self.web is not None:  # up first: /healthz says what the start waits for
                await self.web.start()
                if self.dashboard is not None:
                    where = self.settings.dashboard_url or self.web.url
                    log.info("the dashboard is at %s/", where)
            try:
                if not await self.database.open(stop):
                    await self.close()
                    return False
            except (OSError, sqlite3.DatabaseError) as exc:  # not Discord's: the database's
                raise StoreError(
                    f"cannot open the database {database_name(self.settings)}: {exc}"
                ) from exc
            if adopted := await self.bot.announcements.adopt_earlier_skips():
                log.info(
                    "%d announcement(s): skips of an earlier version kept in the rule", adopted
                )
            await self.bot.login(self.settings.token)
            self.bot.log_invites()
            await self.shards.start()
            await self.shards.wait_ready()
        except BaseException:
            await self.close()
            raise
        return True

    async def wait(self) -> None:
        """Until a shard fails for good (raises its failure)."""
        await self.shards.wait()

    async def close(self, *, hand_over: bool = False) -> None:
        """Stop everything. ``hand_over`` (SIGTERM): the shards are handed to the other
        instances first, each session closed once its taker's is ready (alone: at once)."""
        try:
            with contextlib.suppress(Exception):
                await self.shards.close(hand_over=hand_over)
            if self.web is not None:
                await self.web.stop()
            await self.sched.stop()
        finally:
            with contextlib.suppress(Exception):
                await self.crossposter.close()
            with contextlib.suppress(Exception):
                await self.webhook_requests.close()
            with contextlib.suppress(Exception):
                await self.bot.close()


async def run(settings: Settings) -> int:
    """Run until SIGINT/SIGTERM or a fatal error; returns the exit code."""
    crier = Crier(settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    try:
        if not await crier.start(stop=stop):  # stopped while waiting for the database
            return 0
    except discord.LoginFailure:
        return fatal(
            "Discord rejected DISCORD_TOKEN (401 Unauthorized). Copy the bot token again from "
            "the developer portal (Bot -> Reset Token) into .env."
        )
    except StoreMisconfigured as exc:  # the settings are wrong: as a bad setting is
        return fatal(f"{exc} (correct DATABASE_URL)", CONFIG_ERROR)
    except StoreError as exc:
        return fatal(str(exc))
    except ConfigError as exc:
        return fatal(str(exc))
    except sqlite3.DatabaseError as exc:  # damage found after the file opened
        return fatal(
            f"cannot use {database_name(settings)} as a database: {exc}. Restore it from a "
            "backup or point DATABASE_URL at another file."
        )
    except (aiohttp.ClientError, OSError) as exc:
        return fatal(f"cannot reach Discord at {settings.api_base}: {exc}")
    waiter = asyncio.create_task(stop.wait())
    runner = asyncio.create_task(crier.wait())
    done, _ = await asyncio.wait({waiter, runner}, return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    log.info("shutting down")
    await crier.close(hand_over=runner not in done)
    failure = runner.exception() if runner in done else None
    if failure is not None:
        if isinstance(failure, discord.LoginFailure):
            return fatal("Discord rejected DISCORD_TOKEN (401 Unauthorized).")
        if isinstance(failure, ConfigError):
            return fatal(str(failure))
        log.error("the gateway connection failed: %s", failure)
        return 1
    return 0


def database_name(settings: Settings) -> str:
    """The database as an admin knows it: the file, or the URL without its password."""
    kind, where = settings.database
    return where if kind == "sqlite" else without_password(where)


def main(argv: Sequence[str] | None = None, *, settings: Settings | None = None) -> int:
    """Run the bot with ``settings``, by default those of the environment and ``.env``
    (``argv`` is not read: :func:`bot.app.cli.main` parses the command line)."""
    if settings is None:
        try:
            settings = load_settings()
        except ConfigError as exc:
            return fatal(str(exc), CONFIG_ERROR)
    setup_logging(settings)
    try:
        return asyncio.run(run(settings))
    except KeyboardInterrupt:
        return 130
