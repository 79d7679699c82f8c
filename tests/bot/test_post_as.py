"""Posting as the community (issue 36, item 3), end to end through discord.py against the fake
Discord: ``/edit as_name: as_avatar:`` posts through a webhook of the channel that the bot
makes once and reuses, exactly once without a nonce (the intent recorded first, the
channel's messages by the webhook looked up before any re-send), in threads and forums too,
edits in place through the same webhook, a deleted webhook made again, and the refusals
(no Manage Webhooks, 15 webhooks already) said in words."""

from __future__ import annotations

import re
import time
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from tests.bot.conftest import db_snapshot, run_command, schedule_id
from tests.bot.test_delivery import advance, advance_to_retry, deliveries
from tests.fakediscord import Permissions as P
from tests.fakediscord.webhooks import MAX_WEBHOOKS_PER_CHANNEL

if TYPE_CHECKING:
    from bot.app import Crier
    from scheduler.testing import FakeClock
    from tests.bot.conftest import World
    from tests.fakediscord.state import Channel, Message
    from tests.fakediscord.webhooks import Webhook

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
BOT = P.VIEW_CHANNEL | P.SEND_MESSAGES | P.MENTION_EVERYONE | P.READ_MESSAGE_HISTORY
HOOKS = BOT | P.MANAGE_WEBHOOKS
EXECUTE = r"/webhooks/\d+/[^/]+"


def can_post_as(world: World) -> None:
    """The bot may manage webhooks (and read history); so may the admin who edits."""
    world.guild.set_bot_permissions(HOOKS | P.CREATE_PUBLIC_THREADS | P.EMBED_LINKS)
    world.guild.role_named("admins").edit(permissions=P.MANAGE_GUILD | P.MANAGE_WEBHOOKS)


async def edit(world: World, local_id: int, **options: Any) -> str:
    cb = await run_command(world, "edit", id=local_id, **options)
    return cb.content or ""


async def as_town_hall(world: World, channel: Channel | None = None, **schedule: Any) -> int:
    """An announcement (in #news unless told, in a minute unless told) that posts as "Town
    hall" with an avatar."""
    schedule.setdefault("when", "in 1m")
    schedule.setdefault("message", "Doors open at six")
    local = await schedule_id(world, channel=channel or world.news, **schedule)
    avatar = world.fake.make_attachment("hall.png", PNG)
    said = await edit(world, local, as_name="Town hall", as_avatar=avatar)
    assert "**Posts as:** the bot → **Town hall**" in said, said
    return local


def executes(world: World) -> list[Any]:
    return [r for r in world.fake.requests if r.method == "POST" and re.fullmatch(EXECUTE, r.path)]


def webhook_posts(world: World, hook: Webhook) -> list[Message]:
    return world.fake.webhooks.messages_by(hook)


async def test_posts_come_from_the_name_and_avatar_through_one_webhook(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    can_post_as(world)
    local = await as_town_hall(world, when="in 1m", repeat="daily")
    info = (await run_command(world, "info", id=local)).content or ""
    assert "**Posts as:** **Town hall**, through a webhook of the channel" in info, info
    await advance(crier, clock, timedelta(minutes=1))
    await advance(crier, clock, timedelta(days=1))

    [hook] = world.fake.webhooks.of(world.news)  # made once, reused
    assert (hook.name, hook.avatar_data, hook.creator.id) == (
        "Town hall",
        PNG,
        world.fake.bot_user.id,
    )
    posts = webhook_posts(world, hook)
    assert [(m.content, m.author.username, m.nonce) for m in posts] == [
        ("Doors open at six", "Town hall", None)
    ] * 2
    assert world.fake.bot_messages(world.news) == []  # none as the bot
    rows = await deliveries(crier)
    assert [(r["state"], r["message_id"]) for r in rows] == [("sent", m.id) for m in posts]
    creates = [r for r in world.fake.requests if r.path == f"/channels/{world.news.id}/webhooks"]
    assert [r.method for r in creates] == ["GET", "POST"]  # listed once, made once
    assert all(r.query.get("wait") == "true" for r in executes(world))


async def test_as_name_none_posts_as_the_bot_again(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    can_post_as(world)
    local = await as_town_hall(world)
    said = await edit(world, local, as_name="none")
    assert "**Posts as:** **Town hall** → the bot" in said, said
    await advance(crier, clock, timedelta(minutes=1))
    assert [m.content for m in world.fake.bot_messages(world.news)] == ["Doors open at six"]
    assert world.fake.webhooks.of(world.news) == []


async def test_without_manage_webhooks_edit_is_refused_and_nothing_is_written(
    world: World, crier: Crier
) -> None:
    world.guild.role_named("admins").edit(permissions=P.MANAGE_GUILD | P.MANAGE_WEBHOOKS)
    world.guild.set_bot_permissions(BOT)  # no Manage Webhooks
    local = await schedule_id(world, when="in 1h", message="hi")
    before = await db_snapshot(crier)
    said = await edit(world, local, as_name="Town hall")
    assert "I need **Manage Webhooks** in <#" in said, said
    assert await db_snapshot(crier) == before
    assert world.fake.webhooks.of(world.news) == []

    world.guild.set_bot_permissions(HOOKS)
    world.guild.role_named("admins").edit(permissions=P.MANAGE_GUILD)  # the member lacks it
    said = await edit(world, local, as_name="Town hall")
    assert "needs **Manage Webhooks** there, and you don't have it" in said, said
    assert await db_snapshot(crier) == before


async def test_a_502_after_the_execute_made_the_message_yields_one_message(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """Discord made the message and answered 502: the execute is not retried by anything
    but the job, whose re-run finds the message among the channel's messages by the
    webhook and records it, without executing again."""
    can_post_as(world)
    await as_town_hall(world)
    world.fake.faults.add(method="POST", path_regex=EXECUTE, after_effect=True, status=502)
    await advance(crier, clock, timedelta(minutes=1))
    [hook] = world.fake.webhooks.of(world.news)
    [made] = webhook_posts(world, hook)
    [row] = await deliveries(crier)
    assert row["state"] == "sending", row
    assert "502" in (row["error"] or ""), row
    assert [r.status for r in executes(world)] == [502]

    await advance_to_retry(crier, clock, int(row["job"]))

    [row] = await deliveries(crier)
    assert (row["state"], row["message_id"], row["attempts"]) == ("sent", made.id, 2), row
    assert webhook_posts(world, hook) == [made]
    assert len(executes(world)) == 1
    looked = [r for r in world.fake.requests if r.method == "GET" and r.path.endswith("/messages")]
    assert looked, world.fake.requests
    assert looked[-1].query.get("after"), looked


async def test_a_webhook_deleted_by_a_moderator_is_made_again_and_posts_once(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    can_post_as(world)
    await as_town_hall(world, repeat="daily")
    await advance(crier, clock, timedelta(minutes=1))
    [first] = world.fake.webhooks.of(world.news)
    world.fake.webhooks.delete(first)

    await advance(crier, clock, timedelta(days=1))

    [second] = world.fake.webhooks.of(world.news)
    assert second.id != first.id
    assert [m.content for m in webhook_posts(world, second)] == ["Doors open at six"]
    assert [r.status for r in executes(world)] == [200, 404, 200]  # the 404 did nothing
    rows = await deliveries(crier)
    assert [r["state"] for r in rows] == ["sent", "sent"]


async def test_an_edit_goes_in_place_through_the_webhook(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    can_post_as(world)
    local = await as_town_hall(world)
    await advance(crier, clock, timedelta(minutes=1))
    [hook] = world.fake.webhooks.of(world.news)
    [post] = webhook_posts(world, hook)

    said = await edit(world, local, message="Doors open at seven")
    assert "being edited in place" in said, said
    await advance(crier, clock, 1)

    assert (post.content, post.edit_count) == ("Doors open at seven", 1)
    patches = [r for r in world.fake.requests if r.method == "PATCH"]
    assert [p.path for p in patches] == [f"/webhooks/{hook.id}/{hook.token}/messages/{post.id}"]


async def test_threads_and_forum_posts_go_through_their_channel_s_webhook(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    can_post_as(world)
    thread = world.guild.add_thread(world.news, "ongoing")
    forum = world.guild.add_forum("releases", tags=["news"])
    await world.fake.wait_until(
        lambda: crier.bot.get_channel(forum.id) is not None, what="the forum in the cache"
    )
    await as_town_hall(world, channel=thread, message="in the thread")
    await as_town_hall(world, channel=forum, message="v2 is out", title="Release")
    await advance(crier, clock, timedelta(minutes=1))

    [to_news] = world.fake.webhooks.of(world.news)  # the thread's parent's
    [to_forum] = world.fake.webhooks.of(forum)
    [in_thread] = webhook_posts(world, to_news)
    assert in_thread.channel_id == thread.id
    [post] = world.fake.forum_posts(forum)
    assert (post.name, post.owner_id) == ("Release", to_forum.id)
    assert webhook_posts(world, to_forum)[0].id == post.id


async def test_fifteen_webhooks_already_fails_the_post_in_words(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    can_post_as(world)
    for i in range(MAX_WEBHOOKS_PER_CHANNEL):
        world.fake.webhooks.add(world.news, f"theirs {i}", owner=world.guild.owner)
    await as_town_hall(world)
    await advance(crier, clock, timedelta(minutes=1))
    [row] = await deliveries(crier)
    assert row["state"] == "failed", row
    assert "already has 15 webhooks" in row["error"], row
    assert world.fake.channel_messages(world.news) == []


async def test_names_discord_refuses_are_refused(world: World, crier: Crier) -> None:
    can_post_as(world)
    local = await schedule_id(world, when="in 1h", message="hi")
    for name in ("Discord staff", "mr CLYDE"):
        said = await edit(world, local, as_name=name)
        assert "Discord refuses names that contain" in said, said
    avatar = world.fake.make_attachment("notes.txt", b"hello")
    said = await edit(world, local, as_avatar=avatar)
    assert "give `as_name` too" in said, said


# --- the look-up adopts only this occurrence's post -----------------------------------------------


async def test_the_look_up_adopts_only_the_post_this_occurrence_made(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """The second occurrence of a daily post is refused with a 502 before Discord made
    anything; before its re-run, the channel holds three messages by the same webhook that
    are not its post: the first occurrence's (same text, recorded), one made through the
    webhook with another text (not recorded), and one with the same text made long before
    the occurrence's first attempt (not recorded). The re-run adopts none of them: it
    executes again, once. Each rule fails this test when taken out."""
    can_post_as(world)
    await as_town_hall(world, repeat="daily")
    await advance(crier, clock, timedelta(minutes=1))
    [hook] = world.fake.webhooks.of(world.news)
    [first] = webhook_posts(world, hook)
    world.fake.faults.add(method="POST", path_regex=EXECUTE, status=502)  # nothing made
    await advance(crier, clock, timedelta(days=1))
    rows = await deliveries(crier)
    assert [r["state"] for r in rows] == ["sent", "sending"], rows
    other_text = world.fake.webhooks.post(hook, "Someone else's news")
    long_before = world.fake.webhooks.post(hook, "Doors open at six", at=time.time() - 3600)

    await advance_to_retry(crier, clock, int(rows[1]["job"]))

    posts = webhook_posts(world, hook)
    [second] = [m for m in posts if m not in (first, other_text, long_before)]
    assert second.content == "Doors open at six"
    rows = await deliveries(crier)
    assert [(r["state"], r["message_id"]) for r in rows] == [
        ("sent", first.id),
        ("sent", second.id),
    ]
    assert [r.status for r in executes(world)] == [200, 502, 200]


async def test_a_webhook_made_whose_answer_was_lost_is_used_not_made_again(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """Discord made the channel's webhook and answered 502: the re-run lists the channel's
    webhooks, finds the one the bot made and posts through it."""
    can_post_as(world)
    await as_town_hall(world)
    made = re.escape(f"/channels/{world.news.id}/webhooks")
    world.fake.faults.add(method="POST", path_regex=made, after_effect=True, status=502)
    await advance(crier, clock, timedelta(minutes=1))
    [row] = await deliveries(crier)
    assert row["state"] == "sending", row

    await advance_to_retry(crier, clock, int(row["job"]))

    [hook] = world.fake.webhooks.of(world.news)
    [post] = webhook_posts(world, hook)
    [row] = await deliveries(crier)
    assert (row["state"], row["message_id"]) == ("sent", post.id)


async def test_a_send_begun_as_the_bot_is_finished_as_the_bot_with_its_nonce(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """The occurrence's send (as the bot, with its nonce) took effect and its answer was
    lost (the connection dropped); then the announcement was given a name to post as. The
    re-run sends the normal way again with the same nonce (Discord answers with the first
    message): one message, and no webhook execute. The name applies from the next
    occurrence."""
    can_post_as(world)
    local = await schedule_id(world, when="in 1m", message="Doors open at six")
    sends = re.escape(f"/channels/{world.news.id}/messages")
    world.fake.faults.add(method="POST", path_regex=sends, after_effect=True, disconnect=True)
    await advance(crier, clock, timedelta(minutes=1))
    [row] = await deliveries(crier)
    assert row["state"] == "sending", row
    said = await edit(world, local, as_name="Town hall")
    assert "**Town hall**" in said, said

    await advance_to_retry(crier, clock, int(row["job"]))

    [msg] = world.fake.bot_messages(world.news)
    [row] = await deliveries(crier)
    assert (row["state"], row["message_id"]) == ("sent", msg.id)
    assert executes(world) == []
    assert world.fake.nonce_dedup_hits == 1


async def test_the_retention_deletes_the_intent_of_each_delivery_record_it_deletes(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """HISTORY_DAYS: a post made as someone keeps its intent row only as long as its
    delivery record (the one it edits in place among them)."""
    from tests.bot.test_retention import count, run_job

    can_post_as(world)
    local = await as_town_hall(world, repeat="every minute")
    for _ in range(8):
        await advance(crier, clock, timedelta(minutes=1))
    ann = await crier.bot.announcements.get(world.guild.id, local)
    assert await count(crier, "bot_webhook_posts", ann.id) == 8
    crier.retention.keep_for = 0.0
    await run_job(crier)
    kept = await count(crier, "bot_deliveries", ann.id)
    assert 0 < kept < 8
    assert await count(crier, "bot_webhook_posts", ann.id) == kept
    said = await edit(world, local, message="Doors open at seven")  # the latest, in place
    assert "being edited in place" in said, said


# --- templates, export and import ----------------------------------------------------------------


async def test_a_template_keeps_who_it_posts_as_and_an_export_carries_it_to_another_server(
    world: World, crier: Crier, clock: FakeClock, other: World
) -> None:
    """/template save keeps the name and avatar and /schedule template: applies them (the
    post goes through the webhook with that avatar); /export writes them (never the webhook
    or its token), /import makes them again in another server, whose post goes through a
    webhook made there."""
    import base64
    import json

    from tests.bot.test_export_import import export, import_file

    can_post_as(world)
    can_post_as(other)
    local = await as_town_hall(world, when="in 2h")
    h = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "template save", {"name": "hall", "from": local}
    )
    saved = (await h.response()).content or ""
    assert "posts as **Town hall**" in saved, saved
    await schedule_id(world, template="hall", when="in 1m")
    await advance(crier, clock, timedelta(minutes=1))
    [hook] = world.fake.webhooks.of(world.news)
    assert hook.avatar_data == PNG
    assert [m.author.username for m in webhook_posts(world, hook)] == ["Town hall"]

    _, data = await export(world)
    doc = json.loads(data)
    assert hook.token not in data.decode()
    avatar = {"filename": "hall.png", "content_type": "image/png",
              "data": base64.b64encode(PNG).decode()}  # fmt: skip
    assert [a["post_as"] for a in doc["announcements"]] == [{"name": "Town hall", "avatar": avatar}]
    assert [t["post_as"] for t in doc["templates"]] == [{"name": "Town hall", "avatar": avatar}]
    done, _ = await import_file(other, data, confirm=True)
    assert "Imported" in done.content, done.content
    assert (await crier.bot.announcements.template(other.guild.id, "hall")).post_as is not None
    await advance(crier, clock, timedelta(hours=2) - timedelta(minutes=1))  # its time
    [theirs] = world.fake.webhooks.of(other.news)
    assert theirs.avatar_data == PNG
    assert [m.content for m in webhook_posts(world, theirs)] == ["Doors open at six"]


# --- several places -------------------------------------------------------------------------------


async def test_each_place_posts_as_the_name_through_its_own_webhook_once(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """also_in: the post in the other place goes through that channel's webhook (one the
    bot made there earlier, adopted); a 502 after its execute took effect is followed by one
    message there (found by the look-up), and an edit goes in place through it."""
    can_post_as(world)
    fake = world.fake
    in_general = fake.webhooks._new(
        world.general, "Crier", None, fake.bot_user, application_id=fake.application_id
    )
    local = await as_town_hall(world)
    said = await edit(world, local, also_in=f"<#{world.general.id}>")
    assert "Edited" in said, said
    there = re.escape(f"/webhooks/{in_general.id}/{in_general.token}")
    fake.faults.add(method="POST", path_regex=there, after_effect=True, status=502)
    await advance(crier, clock, timedelta(minutes=1))
    assert len(webhook_posts(world, in_general)) == 1  # made, and answered 502
    for _ in range(3):  # its re-run, after its backoff
        await advance(crier, clock, timedelta(minutes=1))
    [in_news] = fake.webhooks.of(world.news)
    assert fake.webhooks.of(world.general) == [in_general]
    assert [m.content for m in webhook_posts(world, in_news)] == ["Doors open at six"]
    [post] = webhook_posts(world, in_general)
    assert post.author.username == "Town hall"
    assert len(executes(world)) == 2  # one each: the 502'd one was found, not made again

    said = await edit(world, local, message="Doors open at seven")
    await advance(crier, clock, 1)
    assert post.content.startswith("Doors open at seven")
    assert webhook_posts(world, in_news)[0].content.startswith("Doors open at seven")


async def test_a_forum_post_made_before_a_502_is_found_among_the_forum_s_posts(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """A new forum post through the forum's webhook (thread_name) took effect and answered
    502: the re-run finds the post the webhook started (among the forum's threads, asked of
    Discord) and records it; no second post."""
    can_post_as(world)
    forum = world.guild.add_forum("releases", tags=["news"])
    await world.fake.wait_until(
        lambda: crier.bot.get_channel(forum.id) is not None, what="the forum in the cache"
    )
    await as_town_hall(world, channel=forum, message="v2 is out", title="Release")
    world.fake.faults.add(method="POST", path_regex=EXECUTE, after_effect=True, status=502)
    await advance(crier, clock, timedelta(minutes=1))
    [made] = world.fake.forum_posts(forum)
    [row] = await deliveries(crier)
    assert row["state"] == "sending", row

    await advance_to_retry(crier, clock, int(row["job"]))

    assert world.fake.forum_posts(forum) == [made]
    [row] = await deliveries(crier)
    assert (row["state"], row["message_id"]) == ("sent", made.id)
    assert len(executes(world)) == 1


async def test_posting_as_someone_asks_for_the_same_rights_in_each_other_place(
    world: World, crier: Crier
) -> None:
    can_post_as(world)
    world.general.set_overwrite(world.guild.bot_member, deny=P.MANAGE_WEBHOOKS)
    local = await schedule_id(world, when="in 1h", message="hi")
    said = await edit(world, local, also_in=f"<#{world.general.id}>")
    assert "Edited" in said, said
    before = await db_snapshot(crier)
    said = await edit(world, local, as_name="Town hall")
    assert f"I need **Manage Webhooks** in <#{world.general.id}>" in said, said
    assert await db_snapshot(crier) == before


async def test_replace_deletes_the_post_before_through_its_webhook(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """/edit replace: with as_name: the post before is the webhook's, not the bot's: it is
    deleted through the webhook (without Manage Messages, which the bot lacks here)."""
    can_post_as(world)
    local = await as_town_hall(world, repeat="daily")
    said = await edit(world, local, replace=True)
    assert "Edited" in said, said
    await advance(crier, clock, timedelta(minutes=1))
    [hook] = world.fake.webhooks.of(world.news)
    [first] = webhook_posts(world, hook)
    await advance(crier, clock, timedelta(days=1))
    [second] = webhook_posts(world, hook)
    assert first.deleted
    assert second is not first
    deletes = [r.path for r in world.fake.requests if r.method == "DELETE"]
    assert deletes == [f"/webhooks/{hook.id}/{hook.token}/messages/{first.id}"], deletes


async def test_postnow_posts_as_the_name_once_across_a_502(
    world: World, crier: Crier, clock: FakeClock
) -> None:
    """/postnow of an announcement that posts as someone: the extra post goes through the
    channel's webhook; a 502 after its execute took effect is followed by one message (the
    look-up finds it), apart from the occurrence's own post at its time."""
    can_post_as(world)
    local = await as_town_hall(world, when="in 2h")
    world.fake.faults.add(method="POST", path_regex=EXECUTE, after_effect=True, status=502)
    h = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "postnow", {"id": local}
    )
    assert "is being posted in" in ((await h.response(timeout=5)).content or "")
    for _ in range(4):  # the first attempt (502), then its re-run after the backoff
        await advance(crier, clock, timedelta(seconds=30))
    [hook] = world.fake.webhooks.of(world.news)
    [extra] = webhook_posts(world, hook)
    assert extra.author.username == "Town hall"
    assert len(executes(world)) == 1
    async with crier.sched.reader() as db:
        cur = await db.execute("SELECT state, message_id FROM bot_extra_posts")
        assert [(r["state"], r["message_id"]) for r in await cur.fetchall()] == [("sent", extra.id)]
    await advance(crier, clock, timedelta(hours=2))  # the occurrence itself, apart
    assert len(webhook_posts(world, hook)) == 2
