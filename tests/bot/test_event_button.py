"""The post of an occurrence that has a Discord event carries a link button to it, end to end
through discord.py against the fake Discord: in a channel, a thread and a forum post; none
without an event; the same button on the nonce re-send of an interrupted attempt
(byte-identical); its label in the server's language."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from tests.bot.conftest import run_command
from tests.bot.test_delivery import advance, messages_regex, posts, send_requests
from tests.bot.test_events import BASE, events, refuse_next_event, schedule
from tests.fakediscord import Permissions as P

if TYPE_CHECKING:
    from bot.app import Crier
    from scheduler.testing import FakeClock
    from tests.bot.conftest import CrierFactory, World
    from tests.fakediscord.state import Message


@pytest.fixture
async def crier(world: World, crier_factory: CrierFactory) -> Crier:
    world.guild.set_bot_permissions(BASE | P.CREATE_EVENTS | P.CREATE_PUBLIC_THREADS)
    return await crier_factory(event_lead=86400.0)


def buttons(message: Message) -> list[dict[str, Any]]:
    """The buttons the message shows (in its action rows)."""
    return [c for row in message.components for c in row.get("components") or []]


def link_to(world: World, event_id: int, label: str = "Discord event") -> list[dict[str, Any]]:
    """The components of a post linking to event ``event_id``: one row, one link button."""
    url = f"https://discord.com/events/{world.guild.id}/{event_id}"
    return [{"type": 1, "components": [{"type": 2, "style": 5, "url": url, "label": label}]}]


def shown(components: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``components`` as compared here: each button's type, style, url and label (the
    fake's copy, or discord.py's sending, may add an ``id`` or ``disabled``)."""
    keep = ("type", "style", "url", "label")
    return [
        {
            "type": row["type"],
            "components": [{k: c[k] for k in keep if k in c} for c in row["components"]],
        }
        for row in components
    ]


async def test_a_post_with_an_event_links_to_it_and_one_without_has_no_button(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    await schedule(world, when="in 2h", message="Meetup", event=True, event_location="Hall")
    await schedule(world, when="in 2h", message="Just news")
    await advance(crier, clock, 1)
    [event] = events(world)
    await advance(crier, clock, timedelta(hours=2))
    with_event, without = sorted(posts(world, world.news), key=lambda m: m.content != "Meetup")
    assert with_event.content == "Meetup"  # no {event}: the link is the button's
    assert shown(with_event.components) == link_to(world, event.id)
    assert without.content == "Just news"
    assert without.components == []
    # What discord.py sent: a link button has a url and no custom_id (Discord's rule; the
    # fake refuses one that breaks it).
    [sent] = [r for r in send_requests(world, world.news) if r.body.get("components")]
    [[button]] = [row["components"] for row in sent.body["components"]]
    assert "custom_id" not in button


async def test_an_occurrence_whose_event_was_not_created_has_no_button(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """Discord refused the event: the post still goes out, without a button."""
    refuse_next_event(world)
    await schedule(world, when="in 2h", message="Meetup", event=True, event_location="Hall")
    await advance(crier, clock, 1)
    assert events(world) == []
    await advance(crier, clock, timedelta(hours=2))
    [post] = posts(world, world.news)
    assert post.components == []


async def test_a_thread_and_a_forum_post_carry_the_button_too(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    thread = world.guild.add_thread(world.news, "weekly")
    forum = world.guild.add_forum("board", tags=["news"])
    await schedule(world, channel=thread, when="in 2h", message="In the thread", event=True,
                   event_location="Hall A")  # fmt: skip
    await schedule(world, channel=forum, title="Board meeting", tags="news", when="in 2h",
                   message="In the forum", event=True, event_location="Hall B")  # fmt: skip
    await advance(crier, clock, 1)
    by_place = {e.location: e.id for e in events(world)}
    await advance(crier, clock, timedelta(hours=2))
    [in_thread] = posts(world, thread)
    assert shown(in_thread.components) == link_to(world, by_place["Hall A"])
    [post] = world.fake.forum_posts(forum)
    starter = world.fake.get_message(post.id)
    assert starter is not None
    assert shown(starter.components) == link_to(world, by_place["Hall B"])


async def test_the_resend_of_an_interrupted_attempt_is_byte_identical_with_its_button(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """The message is made but its answer lost (a 503 after the effect): the retry sends
    the same request, button included (read from the recorded event), and Discord dedups
    it by its nonce."""
    await schedule(world, when="in 2h", message="Meetup", event=True, event_location="Hall")
    await advance(crier, clock, 1)
    [event] = events(world)
    world.fake.faults.add(
        method="POST", path_regex=messages_regex(world.news), status=503, after_effect=True
    )
    await advance(crier, clock, timedelta(hours=2))
    [created] = posts(world, world.news)
    await advance(crier, clock, timedelta(seconds=61))  # the retry, after its backoff
    assert posts(world, world.news) == [created]
    first, again = send_requests(world, world.news)
    assert (first.status, again.status) == (503, 200)
    assert first.body == again.body
    assert shown(first.body["components"]) == link_to(world, event.id)
    assert world.fake.nonce_dedup_hits == 1
    assert shown(created.components) == link_to(world, event.id)


async def test_the_button_is_labelled_in_the_servers_language(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    handle = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "settings", {"language": "fr"}
    )
    await handle.response(timeout=5)
    await schedule(world, when="in 2h", message="Réunion", event=True, event_location="Salle")
    await advance(crier, clock, 1)
    [event] = events(world)
    await advance(crier, clock, timedelta(hours=2))
    [post] = posts(world, world.news)
    assert shown(post.components) == link_to(world, event.id, "Événement Discord")


async def test_an_edit_of_the_posted_message_keeps_its_button(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """/edit brings the posted message up to date (text, embed, files) and leaves its
    button as it is."""
    local = await schedule(world, when="in 2h", message="Meetup", event=True,
                           event_location="Hall")  # fmt: skip
    await advance(crier, clock, 1)
    [event] = events(world)
    await advance(crier, clock, timedelta(hours=2))
    cb = await run_command(world, "edit", id=local, message="Meetup (bring snacks)")
    assert "dit" in (cb.content or ""), cb.content
    await advance(crier, clock, 1)
    [post] = posts(world, world.news)
    assert post.content == "Meetup (bring snacks)"
    assert shown(post.components) == link_to(world, event.id)
