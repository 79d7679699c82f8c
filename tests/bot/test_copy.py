"""The message command "Schedule a copy" (issue 36, item 5), end to end through discord.py
against the fake Discord: right-click a message → Apps → Schedule a copy → the form (when,
repeat, the channel: the message's own unless another is picked) → the message's text, embed
and files are scheduled; the files are downloaded when the form is sent and kept as bytes, so
the copy posts them after Discord's links to them expired. What can't be copied is refused in
words before the form opens, and nothing is written."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from tests.bot.conftest import CrierFactory, World, db_snapshot
from tests.bot.test_delivery import advance
from tests.fakediscord import Permissions as P
from tests.fakediscord.interactions import (
    CB_CHANNEL_MESSAGE,
    CB_DEFERRED_CHANNEL_MESSAGE,
    CB_MODAL,
    InteractionHandle,
)

if TYPE_CHECKING:
    from bot.app import Crier
    from scheduler.testing import FakeClock
    from tests.fakediscord.state import Channel, Member, Message

COPY = "Schedule a copy"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
PDF = b"%PDF-1.4\n" + b"rules " * 100


async def copy_of(
    world: World, message: Message, *, by: Member | None = None, where: Channel | None = None
) -> InteractionHandle:
    """Right-click ``message`` → Apps → Schedule a copy; the interaction."""
    return await world.fake.invoke_message_command(
        world.guild, where or world.general, by or world.admin, COPY, message
    )


async def scheduled(handle: InteractionHandle, **values: Any) -> tuple[int, str]:
    """Send the form ``handle`` opened with ``values``; the announcement it made (its number)
    and the answer."""
    cb = await handle.response()
    assert cb.type == CB_MODAL, cb.content
    sent = await handle.submit_modal(values)
    answer = await sent.final_content()
    found = re.search(r"Scheduled announcement \*\*#(\d+)\*\*", answer)
    assert found is not None, answer
    return int(found[1]), answer


async def test_a_copy_posts_the_text_and_the_files_after_their_links_expired(
    world: World, crier_on_each_db: Crier, clock: FakeClock
) -> None:
    crier = crier_on_each_db  # (SQLite and PostgreSQL: the files are bytes in the database)
    # The message is someone else's; the bot never saw its text (no message content intent):
    # the message command brings it.
    original = world.fake.post_message(
        world.general,
        world.member,
        "Game night {tonight} at 8!\nBring snacks.",
        files=[("poster.png", PNG), ("rules.pdf", PDF)],
    )
    handle = await copy_of(world, original)
    cb = await handle.response()
    assert cb.type == CB_MODAL
    assert cb.title == COPY
    select = next(
        c["component"] for c in cb.data["components"] if c.get("type") == 18
    )  # the channel, picked already: the message's own
    assert [int(d["id"]) for d in select["default_values"]] == [world.general.id]
    number, answer = await scheduled(handle, when="in 1h", repeat="daily")
    assert f"in <#{world.general.id}>" in answer
    [sent_form] = [h for h in world.fake.interactions.values() if h.type == 5]
    assert sent_form.callback is not None
    assert sent_form.callback.type == CB_DEFERRED_CHANNEL_MESSAGE  # the files take a while
    assert [a.fetch_count for a in original.attachments] == [1, 1]
    for attachment in original.attachments:
        attachment.stop_serving(404)  # Discord's signed links expired
    await advance(crier, clock, timedelta(hours=1))
    await advance(crier, clock, timedelta(days=1))
    posts = world.fake.bot_messages(world.general)
    assert [(p.content, p.files) for p in posts] == [
        ("Game night {tonight} at 8!\nBring snacks.", {"poster.png": PNG, "rules.pdf": PDF})
    ] * 2
    a = await crier.bot.announcements.get(world.guild.id, number)
    assert (a.content, a.author_id, a.repeat_words) == (
        "Game night {{tonight}} at 8!\nBring snacks.", world.admin.user.id,
        "every day at 13:00 (UTC)",
    )  # fmt: skip


async def test_an_embed_is_copied_with_its_title_text_picture_style_and_ping(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    world.guild.set_bot_permissions(
        world.guild.bot_role.permissions | P.EMBED_LINKS | P.ATTACH_FILES
    )
    raiders = world.guild.add_role("raiders", 0, mentionable=True)
    app = world.fake.add_user("Helper App", bot=True)
    world.guild.add_member(app.id)
    embed = {
        "type": "rich",
        "title": "Raid",
        "description": "Bring potions",
        "color": 0xFF0000,
        "url": "https://example.org/raid",
        "footer": {"text": "Hosted by {guild}", "icon_url": "https://example.org/i.png"},
        "fields": [{"name": "Where", "value": "Hall B", "inline": True}],
        "image": {"url": "attachment://map.png"},
        "thumbnail": {"url": "attachment://logo.png"},
    }
    original = world.fake.post_message(
        world.general,
        app,
        f"<@&{raiders.id}>",
        embeds=[embed],
        files=[("notes.txt", b"notes"), ("map.png", PNG), ("logo.png", PNG)],
    )
    handle = await copy_of(world, original)
    number, answer = await scheduled(handle, when="in 2h", channel=[world.news])
    assert "footer's icon is left out" in answer
    for attachment in original.attachments:
        attachment.stop_serving(404)
    await advance(crier, clock, timedelta(hours=2))
    [post] = world.fake.bot_messages(world.news)
    [shown] = post.embeds
    assert (shown["title"], shown["description"]) == ("Raid", "Bring potions")
    assert (shown["color"], shown["url"]) == (0xFF0000, "https://example.org/raid")
    assert shown["footer"] == {"text": "Hosted by {guild}"}  # a text as it was, no icon
    assert shown["fields"] == [{"name": "Where", "value": "Hall B", "inline": True}]
    picture = next(f for f in post.attachments if f.filename == "map.png")
    assert shown["image"]["url"] == picture.url
    logo = next(f for f in post.attachments if f.filename == "thumbnail.png")  # crier's name
    assert shown["thumbnail"]["url"] == logo.url
    assert post.files == {"map.png": PNG, "notes.txt": b"notes", "thumbnail.png": PNG}
    assert post.content == f"<@&{raiders.id}>"
    assert post.pings.roles == {raiders.id}
    a = await crier.bot.announcements.get(world.guild.id, number)
    assert a.channel_id == world.news.id


async def test_what_cant_be_copied_is_refused_in_words_and_nothing_is_written(
    world: World, crier_factory: CrierFactory
) -> None:
    crier = await crier_factory(file_max_bytes=3000.0, guild_files_max_bytes=3500.0)
    app = world.fake.add_user("Poll App", bot=True)
    world.guild.add_member(app.id)
    fake, general, bob = world.fake, world.general, world.member
    text = fake.post_message(general, bob, "plain")
    button = {"type": 1, "components": [{"type": 2, "style": 1, "label": "Go", "custom_id": "x"}]}
    refusals: list[tuple[Message, str]] = [
        (fake.post_message(general, bob, "", poll=("Pizza?", ["yes", "no"])), "a poll"),
        (fake.post_message(general, bob, "hi", stickers=["wave"]), "a sticker"),
        (fake.post_message(general, app, "vote", components=[button]), "buttons or menus"),
        (fake.post_message(general, bob, "", flags=1 << 13, files=[("v.ogg", b"o")]),
         "a voice message"),
        (fake.post_message(general, bob, "", forwarded=text), "a forwarded message"),
        (fake.post_message(general, bob, "", type=6), "a notice from Discord"),
        (fake.post_message(general, app, "", embeds=[{"title": "a"}, {"title": "b"}]),
         "2 embeds"),
        (fake.post_message(general, app, "", embeds=[
            {"title": "t", "description": "d", "author": {"name": "a"},
             "timestamp": "2030-03-01T12:00:00+00:00"}]), "an embed with an author, a time"),
        (fake.post_message(general, app, "", embeds=[
            {"title": "t", "description": "d", "thumbnail": {"url": "https://example.com/t.png"}}]),
         "a thumbnail from elsewhere"),
        (fake.post_message(general, app, "", embeds=[
            {"title": "t", "description": "d", "image": {"url": "https://example.com/x.png"}}]),
         "a picture from elsewhere"),
        (fake.post_message(general, app, "", embeds=[{"description": "no title"}]),
         "an embed without a title"),
        (fake.post_message(general, bob, "", files=[("a.png", PNG)]), "it has no text"),
        (fake.post_message(general, bob, "big", files=[("big.bin", b"x" * 3001)]),
         "`big.bin` is 0.0 MiB"),
        (fake.post_message(general, bob, "two", files=[("a.bin", b"x" * 2000),
                                                       ("b.bin", b"x" * 2000)]),
         "would pass the server's limit"),
    ]  # fmt: skip
    before = await db_snapshot(crier)
    for message, says in refusals:
        cb = await (await copy_of(world, message)).response()
        assert (cb.type, cb.ephemeral) == (CB_CHANNEL_MESSAGE, True), (says, cb.content)
        assert says in (cb.content or ""), (says, cb.content)
    # Only managers copy: an ordinary member's right-click is refused before the form.
    cb = await (await copy_of(world, text, by=bob)).response()
    assert cb.type == CB_CHANNEL_MESSAGE
    assert "Manage Server" in (cb.content or "")
    assert await db_snapshot(crier) == before


async def test_a_file_that_cant_be_downloaded_when_the_form_is_sent_writes_nothing(
    world: World, crier: Crier
) -> None:
    original = world.fake.post_message(
        world.general, world.member, "see attached", files=[("plan.pdf", PDF)]
    )
    handle = await copy_of(world, original)
    assert (await handle.response()).type == CB_MODAL
    before = await db_snapshot(crier)
    original.attachments[0].stop_serving(404)  # the link expired while the form was open
    sent = await handle.submit_modal({"when": "in 1h"})
    answer = await sent.final_content()
    assert "I couldn't download `plan.pdf` (HTTP 404)" in answer
    assert await db_snapshot(crier) == before


async def test_the_form_is_checked_like_schedule(world: World, crier: Crier) -> None:
    original = world.fake.post_message(world.general, world.member, "hello")
    handle = await copy_of(world, original)
    before = await db_snapshot(crier)
    await handle.response()
    sent = await handle.submit_modal({"when": "someday maybe"})
    answer = await sent.final_content()
    assert "I couldn't read that as a time" in answer
    assert await db_snapshot(crier) == before
