"""/style end to end through discord.py against the fake Discord: an embed's colour, footer,
thumbnail and title link, and link buttons, as posted (the JSON discord.py sent, which the
fake checks against Discord's OpenAPI spec) and as edited in place; the refusals (each says
what was wrong and writes nothing); placeholders in the footer; the buttons beside the
event's and Remind me's."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from bot.db import BotDb
from bot.models import Announcement, AnnouncementState, Content, EmbedField, Style
from bot.posting.payload import post_payload
from bot.requests.style import embed_size
from tests.bot.conftest import db_snapshot, run_command
from tests.bot.conftest import schedule_id as schedule
from tests.bot.test_delivery import advance, posts, send_requests
from tests.bot.test_event_button import shown
from tests.fakediscord import Permissions as P

if TYPE_CHECKING:
    from bot.app import Crier
    from scheduler.testing import FakeClock
    from tests.bot.conftest import CrierFactory, World

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
BLURPLE = 0x5865F2


@pytest.fixture
def styled(world: World) -> World:
    """The bot may embed links and attach files (a thumbnail is uploaded with each post)."""
    world.guild.set_bot_permissions(
        P.VIEW_CHANNEL | P.SEND_MESSAGES | P.MENTION_EVERYONE | P.EMBED_LINKS | P.ATTACH_FILES
    )
    return world


async def style(world: World, **options: Any) -> str:
    cb = await run_command(world, "style", **options)
    return cb.content or ""


def link(label: str, url: str) -> dict[str, Any]:
    return {"type": 2, "style": 5, "url": url, "label": label}


async def test_a_styled_embed_posts_its_colour_footer_link_thumbnail_and_buttons(
    styled: World, crier_on_each_db: Crier, clock: FakeClock
) -> None:
    """On SQLite and PostgreSQL (the style as JSON, the thumbnail's bytes)."""
    world, crier = styled, crier_on_each_db
    local = await schedule(world, when="in 1h", title="Game night", message="Friday, 8pm")
    answer = await style(
        world,
        id=local,
        color="#ed4245",
        footer="See you there",
        url="https://example.org/game",
        thumbnail=("logo.png", PNG),
        buttons="Tickets | https://example.org/t; Rules | https://example.org/r",
    )
    assert answer.startswith(f"✏️ Edited announcement **#{local}**"), answer
    assert "**Colour:** none → #ED4245" in answer
    assert "**Link buttons:** none → Tickets, Rules" in answer
    await advance(crier, clock, timedelta(hours=1))
    [post] = posts(world, world.news)
    [sent] = send_requests(world, world.news)
    [embed] = sent.body["embeds"]
    # What discord.py sent (the fake checked it against Discord's spec): the colour as an
    # integer, the footer, the title's link, the thumbnail by its uploaded name.
    assert embed["color"] == 0xED4245
    assert embed["footer"] == {"text": "See you there"}
    assert embed["url"] == "https://example.org/game"
    assert embed["thumbnail"] == {"url": "attachment://thumbnail.png"}
    assert [a.filename for a in post.attachments] == ["thumbnail.png"]
    assert post.attachments[0].data == PNG
    assert post.embeds[0]["thumbnail"]["url"] == post.attachments[0].url  # resolved
    assert shown(post.components) == [
        {
            "type": 1,
            "components": [
                link("Tickets", "https://example.org/t"),
                link("Rules", "https://example.org/r"),
            ],
        }
    ]
    # /info says the style, and /style alone shows it.
    info = (await run_command(world, "info", id=local)).content or ""
    assert "**Colour:** `#ED4245`" in info
    assert "**Thumbnail:** `logo.png`" in info
    assert "**Link buttons:** Tickets (<https://example.org/t>), Rules" in info
    alone = await style(world, id=local)
    assert alone.startswith(f"🎨 The style of announcement **#{local}**:")
    assert "**Footer:** See you there" in alone


async def test_restyling_a_posted_message_edits_it_in_place_buttons_and_all(
    styled: World, crier: Crier, clock: FakeClock
) -> None:
    world = styled
    local = await schedule(world, when="in 10m", title="News", message="v2 is out")
    await style(world, id=local, buttons="Download | https://example.org/d")
    await advance(crier, clock, timedelta(minutes=10))
    [post] = posts(world, world.news)
    assert post.embeds[0]["color"] == BLURPLE  # crier's own until a colour is given
    assert len(shown(post.components)[0]["components"]) == 1
    answer = await style(world, id=local, color="57F287", buttons="none")
    assert "is being edited in place" in answer
    await advance(crier, clock, 1)
    [post] = posts(world, world.news)
    assert post.embeds[0]["color"] == 0x57F287
    assert post.components == []  # the buttons taken away by the PATCH
    [patch] = [r for r in world.fake.requests if r.method == "PATCH"]
    assert patch.body["components"] == []
    # The whole style taken away: blurple again.
    await style(world, id=local, clear="all")
    await advance(crier, clock, 1)
    assert posts(world, world.news)[0].embeds[0]["color"] == BLURPLE


async def test_buttons_go_under_a_plain_text_post_but_the_embeds_style_needs_a_title(
    styled: World, crier: Crier, clock: FakeClock
) -> None:
    world = styled
    local = await schedule(world, when="in 1h", message="plain")
    before = await db_snapshot(crier)
    refused = await style(world, id=local, color="#5865F2")
    assert "an embed only with a title" in refused
    assert await db_snapshot(crier) == before
    await style(world, id=local, buttons="Site | https://example.org")
    await advance(crier, clock, timedelta(hours=1))
    [post] = posts(world, world.news)
    assert (post.content, post.embeds) == ("plain", [])
    assert shown(post.components) == [
        {"type": 1, "components": [link("Site", "https://example.org")]}
    ]


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"color": "blue"}, "`blue` is not a colour. Give one in hex like `#5865F2`"),
        ({"url": "http://example.org"}, "Give one that starts with `https://`"),
        ({"buttons": "Tickets https://example.org"}, "Write each as `label | https://…`"),
        ({"buttons": "A | javascript:alert(1)"}, "Give one that starts with `https://`"),
        (
            {"buttons": "; ".join(f"B{n} | https://example.org/{n}" for n in range(6))},
            "That is 6 buttons; an announcement has at most 5.",
        ),
        ({"buttons": "x" * 81 + " | https://example.org"}, "is 81 characters; Discord shows"),
        ({"thumbnail": ("notes.txt", b"hello")}, "is not an image Discord shows as a thumbnail"),
        ({"footer": "{nope}"}, "The footer uses `{nope}`, which is not a placeholder"),
        ({"footer": "{date} " + "x" * 2040}, "Placeholders are counted at their longest"),
    ],
)
async def test_bad_style_is_refused_in_words_and_writes_nothing(
    styled: World, crier: Crier, options: dict[str, Any], says: str
) -> None:
    world = styled
    local = await schedule(world, when="in 1h", title="T", message="m")
    before = await db_snapshot(crier)
    answer = await style(world, id=local, **options)
    assert says in answer
    assert await db_snapshot(crier) == before


async def test_a_thumbnail_counts_in_the_servers_files(
    styled: World, crier_factory: CrierFactory
) -> None:
    """GUILD_FILES_MAX_MB holds thumbnails too: one that would pass it is refused (nothing
    written), and once kept it counts against the next file."""
    world = styled
    crier = await crier_factory(file_max_bytes=2000.0, guild_files_max_bytes=3000.0)
    local = await schedule(world, when="in 1h", title="T", message="m")
    answer = await style(world, id=local, thumbnail=("logo.png", PNG + b"\x00" * 1800))
    assert "**Thumbnail:** none → logo.png" in answer
    other = await schedule(world, when="in 1h", title="U", message="n")
    before = await db_snapshot(crier)
    refused = await style(world, id=other, thumbnail=("big.png", PNG + b"\x00" * 1500))
    assert "would pass the server's limit" in refused, refused
    assert await db_snapshot(crier) == before


async def test_the_footer_says_its_occurrence(
    styled: World, crier: Crier, clock: FakeClock
) -> None:
    world = styled
    local = await schedule(world, when="in 1h", repeat="daily", title="Daily", message="hi")
    await style(world, id=local, footer="Post {occurrence} · {weekday}")
    await advance(crier, clock, timedelta(hours=1))
    await advance(crier, clock, timedelta(days=1))
    footers = [p.embeds[0]["footer"]["text"] for p in posts(world, world.news)]
    assert sorted(footers) == ["Post 1 · Friday", "Post 2 · Saturday"]


async def test_five_links_and_remind_me_make_two_rows(
    styled: World, crier: Crier, clock: FakeClock
) -> None:
    world = styled
    local = await schedule(world, when="in 1h", message="Big day")
    await run_command(world, "edit", id=local, reminder="15m")
    five = "; ".join(f"L{n} | https://example.org/{n}" for n in range(5))
    await style(world, id=local, buttons=five)
    await advance(crier, clock, timedelta(hours=1))
    [post] = posts(world, world.news)
    first, second = post.components
    assert [b["label"] for b in first["components"]] == [f"L{n}" for n in range(5)]
    assert [b["label"] for b in second["components"]] == ["Remind me"]


def an_announcement(content: str, title: str, style: Style) -> Announcement:
    return Announcement(
        id=1, guild_id=1, local_id=1, channel_id=1, author_id=1, content=content,
        mention=None, allowed_mentions={}, first_ts=0.0, timezone="UTC", repeat_kind=None,
        repeat_cron=None, repeat_every=None, repeat_words=None, job_id=None,
        schedule_name=None, state=AnnouncementState.SCHEDULED, failure=None,
        last_message_id=None, created_at=0.0, updated_at=0.0,
        rich=Content(title=title, style=style),
    )  # fmt: skip


def test_a_late_note_is_left_out_when_the_embed_would_pass_6000_characters() -> None:
    """The note under a post sent late goes in the description only if the whole embed
    (title, text, footer, fields) stays within Discord's 6,000: with fields, the text's own
    4,096 is not the only bound."""
    fields = tuple(EmbedField("n" * 100, "v" * 1000) for _ in range(1))
    style = Style(footer="f" * 800, fields=fields)
    ann = an_announcement("x" * 4000, "t" * 90, style)  # 5,990 characters in all
    assert embed_size(style, "t" * 90, "x" * 4000) == 5990
    late = post_payload(ann, [], late_for=3600.0)
    assert late.embed is not None
    assert late.embed.description == "x" * 4000  # no room for the note
    roomy = an_announcement("x" * 100, "t", style)
    noted = post_payload(roomy, [], late_for=3600.0).embed
    assert noted is not None
    assert noted.description is not None
    assert "Sent late" in noted.description


# --- templates, export and import ---------------------------------------------------------------


async def test_a_template_keeps_the_style_and_thumbnail_and_schedule_applies_them(
    styled: World, crier: Crier, clock: FakeClock
) -> None:
    world = styled
    source = await schedule(world, when="in 1d", title="Raid", message="Bring potions")
    await style(world, id=source, color="#57F287", thumbnail=("logo.png", PNG),
                buttons="Sign up | https://example.org/s")  # fmt: skip
    h = await world.fake.invoke_command(
        world.guild, world.general, world.admin, "template save", {"name": "raid", "from": source}
    )
    assert "Saved" in ((await h.response()).content or "")
    [kept] = await crier.bot.announcements.templates(world.guild.id)
    assert kept.style.color == 0x57F287
    assert kept.thumbnail is not None
    assert kept.thumbnail.data == PNG
    listed = (await run_command(world, "template list")).content or ""
    assert "styled" in listed
    async with crier.sched.reader() as db:  # its thumbnail counts in the server's files
        assert await BotDb(db).template_file_bytes(world.guild.id) == len(PNG)
    await schedule(world, template="raid", when="in 1h")
    await advance(crier, clock, timedelta(hours=1))
    [post] = posts(world, world.news)
    assert post.embeds[0]["color"] == 0x57F287
    assert [a.filename for a in post.attachments] == ["thumbnail.png"]
    assert [b["label"] for row in post.components for b in row["components"]] == ["Sign up"]


async def test_an_export_carries_the_style_into_another_server(
    styled: World, other: World, crier: Crier, clock: FakeClock
) -> None:
    import jsonschema

    from tests.bot.test_export_import import SCHEMA, buttons, export, import_file

    world = styled
    other.guild.set_bot_permissions(
        P.VIEW_CHANNEL | P.SEND_MESSAGES | P.EMBED_LINKS | P.ATTACH_FILES
    )
    local = await schedule(world, when="in 2h", title="Quiz", message="Round {occurrence}")
    await style(world, id=local, color="#ED4245", footer="Host: {weekday}",
                url="https://example.org/quiz", thumbnail=("logo.png", PNG),
                buttons="Rules | https://example.org/r")  # fmt: skip
    _, data = await export(world)
    doc = json.loads(data)
    jsonschema.validate(doc, SCHEMA)
    [row] = doc["announcements"]
    assert row["style"]["color"] == 0xED4245
    assert row["style"]["thumbnail"]["filename"] == "logo.png"
    dry, _ = await import_file(other, data)
    [confirm] = buttons(dry)
    done = await (await world.fake.click_button(dry, confirm, other.admin)).final_message(20)
    assert done.content.startswith("📥 Imported 1 announcement"), done.content
    [made] = (await crier.bot.announcements.export_rows(other.guild.id)).announcements
    assert made.rich.style == (await crier.bot.announcements.get(world.guild.id, local)).rich.style
    # A styled embed without a title is refused in words, row by row.
    row_without_title = {**row, "key": "k2", "title": None}
    refused, _ = await import_file(
        other, json.dumps({**doc, "announcements": [row_without_title]}).encode()
    )
    assert "an embed only with a title" in refused.content, refused.content
    plain_link = {**row, "key": "k3", "style": {**row["style"], "url": "http://example.org"}}
    refused, _ = await import_file(
        other, json.dumps({**doc, "announcements": [plain_link]}).encode()
    )
    assert "starts with `https://`" in refused.content, refused.content
    await advance(crier, clock, timedelta(hours=2))
    [post] = other.fake.bot_messages(other.news)
    assert post.embeds[0]["footer"]["text"] == "Host: Friday"
    assert [a.data for a in post.attachments] == [PNG]
