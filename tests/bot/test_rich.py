"""Rich announcements end to end through discord.py against the fake Discord: an embed
(``title``), ``silent``, and their edits; the embed limits; a fuzz of the new options.

Destinations (threads, forums, announcement channels and publishing) are in
tests/bot/test_destinations.py.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.parsing import InputError
from bot.requests.validation import check_length
from tests.bot.conftest import World, db_snapshot, run_command
from tests.bot.conftest import schedule_id as schedule
from tests.bot.test_delivery import advance
from tests.fakediscord import Permissions as P
from tests.fakediscord.interactions import CB_CHANNEL_MESSAGE, CB_MODAL, iter_components
from tests.proof.conftest import size
from tests.proof.test_schedule_fuzz import CLIENT_REFUSALS, REFUSAL, messages

if TYPE_CHECKING:
    from bot.app import Crier
    from scheduler.testing import FakeClock
    from tests.fakediscord.state import Message

SUPPRESS_NOTIFICATIONS = 1 << 12


def posts(world: World) -> list[Message]:
    return world.fake.bot_messages(world.news)


@pytest.fixture
def embeds(world: World) -> World:
    """The bot may also embed links (the test world's bot has only view, send and pings)."""
    world.guild.set_bot_permissions(
        P.VIEW_CHANNEL | P.SEND_MESSAGES | P.MENTION_EVERYONE | P.EMBED_LINKS
    )
    return world


# --- embeds -------------------------------------------------------------------------------------


async def test_a_title_posts_an_embed_and_the_mention_still_pings(
    embeds: World, crier: Crier, clock: FakeClock
) -> None:
    world = embeds
    crew = world.guild.add_role("crew", mentionable=True)
    await schedule(
        world, when="in 5m", title="Release notes", message="**v2** is out", mention=crew
    )
    await advance(crier, clock, timedelta(minutes=5))
    [post] = posts(world)
    assert post.content == f"<@&{crew.id}>"  # a ping works in the content, never in an embed
    assert post.pings.roles == {crew.id}
    [embed] = post.embeds
    assert (embed["title"], embed["description"]) == ("Release notes", "**v2** is out")
    assert not post.flags & SUPPRESS_NOTIFICATIONS


async def test_a_recurring_embed_is_an_embed_every_time(
    embeds: World, crier: Crier, clock: FakeClock
) -> None:
    world = embeds
    await schedule(world, when="in 1h", repeat="hourly", title="Status", message="all good")
    for _ in range(3):
        await advance(crier, clock, timedelta(hours=1))
    assert [(p.content, [e["title"] for e in p.embeds]) for p in posts(world)] == [
        ("", ["Status"])
    ] * 3


async def test_silent_posts_with_suppress_notifications(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    await schedule(world, when="in 1m", message="quiet one", silent=True)
    await schedule(world, when="in 2m", repeat="every 2 minutes", message="quiet too", silent=True)
    await advance(crier, clock, timedelta(minutes=1))
    await advance(crier, clock, timedelta(minutes=1))
    await advance(crier, clock, timedelta(minutes=2))
    assert [p.content for p in posts(world)] == ["quiet one", "quiet too", "quiet too"]
    assert all(p.flags & SUPPRESS_NOTIFICATIONS for p in posts(world))


async def test_an_embed_needs_embed_links(world: World, crier: Crier) -> None:
    world.news.set_overwrite(world.guild.bot_role, deny=P.EMBED_LINKS)
    before = await db_snapshot(crier)
    cb = await run_command(
        world, "schedule", when="in 1h", title="T", message="body", channel=world.news
    )
    assert cb.type == CB_CHANNEL_MESSAGE
    assert cb.ephemeral
    assert cb.content == (
        f"I need **Embed Links** in <#{world.news.id}> to post there. Ask an admin to grant "
        "it, then try again."
    )
    assert await db_snapshot(crier) == before
    # Without a title no embed is posted: Embed Links is not asked for.
    await schedule(world, when="in 1h", message="plain")


def test_the_embed_limits_are_discords() -> None:
    check_length("x" * 2000, 0, None)
    check_length("x" * 4096, 0, "t" * 256)  # under a title, the description's 4096 apply
    with pytest.raises(InputError, match="Discord allows 2000"):
        check_length("x" * 1991, len("@everyone "), None)
    with pytest.raises(InputError, match="at most 256"):
        check_length("body", 0, "t" * 257)
    with pytest.raises(InputError, match="Discord allows 4096"):
        check_length("x" * 4097, 0, "title")


async def test_a_long_title_is_refused_by_discords_client_and_nothing_is_written(
    world: World, crier: Crier
) -> None:
    before = await db_snapshot(crier)
    with pytest.raises(ValueError, match="max_length=256"):
        await world.fake.invoke_command(
            world.guild,
            world.general,
            world.admin,
            "schedule",
            {"when": "in 1h", "message": "x", "title": "t" * 257},
        )
    assert await db_snapshot(crier) == before


async def test_the_form_has_a_title_field(embeds: World, crier: Crier, clock: FakeClock) -> None:
    world = embeds
    h = await world.fake.invoke_command(
        world.guild,
        world.general,
        world.admin,
        "schedule",
        {"when": "in 1m", "channel": world.news},
    )
    assert (await h.response()).type == CB_MODAL
    assert h.modal is not None
    fields = {
        c["label"]: c["custom_id"] for c in iter_components(h.modal["components"]) if c["type"] == 4
    }
    assert set(fields) == {"Message", "Title (optional: posts it as an embed)"}
    sub = await h.submit_modal(
        {
            fields["Message"]: "line one\nline two",
            fields["Title (optional: posts it as an embed)"]: "Hi",
        }
    )
    assert "✅ Scheduled announcement" in ((await sub.response()).content or "")
    await advance(crier, clock, timedelta(minutes=1))
    [post] = posts(world)
    assert [(e["title"], e["description"]) for e in post.embeds] == [("Hi", "line one\nline two")]


# --- edits cover the embed ----------------------------------------------------------------------


async def test_an_edit_turns_the_posted_message_into_an_embed_and_back(
    embeds: World, crier: Crier, clock: FakeClock
) -> None:
    world = embeds
    local = await schedule(world, when="in 1m", message="plain text")
    await advance(crier, clock, timedelta(minutes=1))
    [post] = posts(world)
    cb = await run_command(world, "edit", id=local, title="Now an embed")
    assert "✏️ Edited announcement" in (cb.content or ""), cb.content
    await advance(crier, clock, timedelta(seconds=1))
    assert posts(world) == [post]  # edited in place, never a second message
    assert post.content == ""
    assert [(e["title"], e["description"]) for e in post.embeds] == [("Now an embed", "plain text")]
    await run_command(world, "edit", id=local, title="none")
    await advance(crier, clock, timedelta(seconds=1))
    assert (post.content, post.embeds) == ("plain text", [])
    assert posts(world) == [post]


async def test_an_edit_can_make_a_pending_announcement_silent(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    local = await schedule(world, when="in 1h", message="later")
    cb = await run_command(world, "edit", id=local, silent=True)
    assert "**Silent:** no → yes" in (cb.content or ""), cb.content
    await advance(crier, clock, timedelta(hours=1))
    [post] = posts(world)
    assert post.flags & SUPPRESS_NOTIFICATIONS


# --- fuzz ---------------------------------------------------------------------------------------

EXAMPLES = size(40, 300)
GENERIC = "Something went wrong"

rich_cases = st.fixed_dictionaries(
    {"message": messages},
    optional={
        "title": st.one_of(messages, st.text(max_size=300)),
        "silent": st.booleans(),
        "publish": st.booleans(),
        "tags": st.text(max_size=30),
        "channel": st.sampled_from(["news", "voice"]),
    },
)


class RichFuzz:
    def __init__(self, world: World, crier: Crier) -> None:
        self.world, self.crier = world, crier
        world.fake.ratelimits.set_message_limit(10_000, 1.0)
        self.lounge = world.guild.add_channel("lounge", type=2)
        self.outcomes: Counter[str] = Counter()

    async def run(self, case: dict[str, Any]) -> None:
        await self._run(case)
        if sum(self.outcomes.values()) == EXAMPLES:
            print(f"\n/schedule rich options fuzz: {dict(self.outcomes)}")

    async def _run(self, case: dict[str, Any]) -> None:
        w = self.world
        options: dict[str, Any] = {"when": "in 1h", **case}
        options["channel"] = {"news": w.news, "voice": self.lounge}[case.get("channel", "news")]
        before = await db_snapshot(self.crier)
        try:
            h = await w.fake.invoke_command(w.guild, w.general, w.admin, "schedule", options)
        except ValueError as exc:  # Discord's client would not send it
            assert any(r in str(exc) for r in (*CLIENT_REFUSALS, "channel type")), exc  # noqa: PT017 (refusing is one allowed outcome)
            self.outcomes["refused by Discord's client"] += 1
            return
        cb = await h.response(timeout=10)
        assert cb.type == CB_CHANNEL_MESSAGE, (cb.type, cb.data)
        assert cb.ephemeral, (cb.type, cb.data)
        content = cb.content or ""
        assert GENERIC not in content, (options, content)
        if content.startswith("✅ Scheduled announcement"):
            found = re.search(r"\*\*#(\d+)\*\*", content)
            assert found is not None
            a = await self.crier.bot.announcements.get(w.guild.id, int(found[1]))
            title = case.get("title")
            assert a.rich.title == (title.strip() if title and title.strip() else None)
            assert a.rich.silent == case.get("silent", False)
            assert not a.rich.publish
            assert not a.rich.tags
            self.outcomes["scheduled"] += 1
            return
        assert content.strip(), content
        assert REFUSAL.search(content), content
        assert await db_snapshot(self.crier) == before, (options, content)
        self.outcomes["refused by the bot"] += 1


@pytest.fixture
def rich_fuzz(world: World, crier: Crier) -> RichFuzz:
    return RichFuzz(world, crier)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    print_blob=True,
)
@given(case=rich_cases)
async def test_the_new_options_are_answered_and_refusals_write_nothing(
    rich_fuzz: RichFuzz, case: dict[str, Any]
) -> None:
    await rich_fuzz.run(case)
