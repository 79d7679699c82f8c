"""The pages of ``/list`` and an ``id`` option's choices, read through the indexes: every
page is the slice of the one order the listing promises (failed and paused ones last
updated first, then scheduled ones by next time, then the rest), whichever side the
recurring ones are found from; choices by prefix are exactly the numbers with that prefix."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from bot.announcements import Announcement, Announcements, AnnouncementState, ListFilter
from bot.db import BotDb, listing
from bot.db.listing import number_ranges
from scheduler import SqliteStore
from tests.bot.test_bulk_create import DAILY, HOURLY, NOW, draft, service
from tests.scheduler.stores import STORE_KINDS, require_postgres

if TYPE_CHECKING:
    from pathlib import Path

PAGE = 4


@pytest.fixture(params=STORE_KINDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "sqlite":
        yield SqliteStore(tmp_path / "db.sqlite")
        return
    dsn = require_postgres()
    from scheduler.stores.postgres import PostgresStore
    from tests.scheduler.pg import fresh_database

    async with fresh_database(dsn) as url:
        yield PostgresStore(url, listen=False)


async def expected_order(a: Announcements, guild: int) -> list[int]:
    """The listing's order, computed from every row of the guild and its schedules."""
    rows: list[Announcement] = []
    for n in range(1, 200):
        try:
            rows.append(await a.get(guild, n))
        except LookupError:
            break
    troubled = sorted(
        (r for r in rows if r.state in (AnnouncementState.FAILED, AnnouncementState.PAUSED)),
        key=lambda r: (-r.updated_at, -r.local_id),
    )
    nexts = {r.id: await a.next_fire(r) for r in rows}
    upcoming = sorted(
        (r for r in rows if r.state == AnnouncementState.SCHEDULED),
        key=lambda r: (nexts[r.id] is None, nexts[r.id] or NOW, r.local_id),
    )
    rest = sorted(
        (r for r in rows if r not in troubled and r not in upcoming),
        key=lambda r: (-r.updated_at, -r.local_id),
    )
    return [r.local_id for r in troubled + upcoming + rest]


@pytest.mark.parametrize(
    "scan", [(1, 0), (1, 1), (10_000, 20)], ids=["guild-side", "mixed", "walk"]
)
async def test_every_page_is_a_slice_of_the_listing_order(
    store: Any, scan: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(listing, "SCAN", scan[0])
    monkeypatch.setattr(listing, "SCAN_PER_ROW", scan[1])
    async with service(store) as a:
        drafts = []
        for i in range(24):  # guild 1 holds most schedules, guild 2 a few
            guild = 2 if i % 4 == 0 else 1
            repeat = (None, DAILY, HOURLY)[i % 3]
            when = NOW + timedelta(hours=(i * 7) % 23 + 1)  # one-offs and schedules interleave
            drafts.append(draft(guild, i, repeat=repeat, first=when))
        await a.create_many(drafts)
        await a.pause(1, 2, actor_id=7)  # troubled
        await a.cancel(1, 3)  # closed
        await a.cancel(1, 5)
        for guild in (1, 2):
            order = await expected_order(a, guild)
            seen: list[int] = []
            for offset in range(0, len(order) + PAGE, PAGE):
                page = await a.listing(guild, offset, PAGE)
                assert page.total == len(order)
                seen += [x.local_id for x in page.items]
                for x in page.items:
                    want = await a.next_fire(x)
                    assert page.next_fires[x.id] == want
            assert seen == order


def test_number_ranges_are_the_numbers_with_the_prefix() -> None:
    for prefix in ("1", "12", "9", "100", "05", "0", "x"):
        for highest in (0, 1, 9, 12, 99, 120, 1300):
            got = {n for lo, hi in number_ranges(prefix, highest) for n in range(lo, hi + 1)}
            assert got == {n for n in range(1, highest + 1) if str(n).startswith(prefix)}


async def test_choices_by_prefix_are_the_newest_numbers_with_that_prefix(store: Any) -> None:
    async with service(store) as a:
        await a.create_many([draft(1, i, repeat=DAILY if i % 2 else None) for i in range(130)])
        await a.cancel(1, 12)
        for prefix, states, recurring in (
            ("1", None, None),
            ("12", (AnnouncementState.SCHEDULED,), None),
            ("1", (AnnouncementState.SCHEDULED,), True),
            ("", (AnnouncementState.CANCELED,), None),
            ("7", None, False),
            ("0", None, None),
        ):
            found = await a.choices(1, states, recurring=recurring, id_prefix=prefix)
            every = [await a.get(1, n) for n in range(130, 0, -1)]
            want = [
                x.local_id
                for x in every
                if str(x.local_id).startswith(prefix)
                and (states is None or x.state in states)
                and (recurring is None or (x.repeat_kind is not None) == recurring)
            ]
            assert [x.local_id for x in found.items] == want[: len(found.items)]
            assert len(found.items) == min(len(want), 200)
            for x in found.items:
                assert found.next_fires[x.id] == await a.next_fire(x)
        # The clock is the test's own (a FakeClock at NOW that nothing moved): nothing above
        # was due, so no send ran (``never`` would have failed it) and no time passed.
        await a.sched.wait_idle()
        assert a.sched.clock.now() == NOW
        assert await a.sched.runs(limit=1) == []


def kept(only: ListFilter, x: Announcement) -> bool:
    """What ``only`` keeps, said in Python (the dashboard's filters once were this)."""
    return (
        (only.states is None or x.state in only.states)
        and (only.recurring is None or x.recurring == only.recurring)
        and (not only.posted or x.last_message_id is not None)
        and (not only.failed or x.state == AnnouncementState.FAILED or x.failure is not None)
        and only.text.lower() in x.content.lower()
    )


FILTERED = [
    ListFilter(),
    ListFilter(states=(AnnouncementState.SCHEDULED,)),
    ListFilter(states=(AnnouncementState.SCHEDULED, AnnouncementState.PAUSED), recurring=True),
    ListFilter(recurring=False),
    ListFilter(states=(AnnouncementState.PAUSED,)),
    ListFilter(failed=True),
    ListFilter(posted=True),
    ListFilter(text="GUILD 1"),
    ListFilter(text="0% o"),  # LIKE's wildcards are matched as typed
    ListFilter(text="f_t"),
    ListFilter(text="!"),
    ListFilter(recurring=True, text="announcement 1"),
]


async def test_a_filtered_listing_is_the_listing_order_of_what_the_filter_keeps(
    store: Any,
) -> None:
    """Every page of a narrowed listing (the dashboard's filters and search) is a slice of
    the listing's one order, keeping exactly what the filter says; ``total`` counts them."""
    async with service(store) as a:
        drafts = [
            draft(1, i, repeat=(None, DAILY, HOURLY)[i % 3], first=NOW + timedelta(hours=i % 9 + 1))
            for i in range(30)
        ]
        drafts += [draft(1, 30, content="50% off_today!"), draft(1, 31, content="50 % of fat")]
        await a.create_many(drafts)
        await a.pause(1, 2, actor_id=7)
        await a.pause(1, 6, actor_id=7)
        await a.cancel(1, 4)
        async with a.sched.transaction() as ctx:
            rows, now = BotDb(ctx.db), ctx.now.timestamp()
            one_off, daily = await a.get(1, 1), await a.get(1, 3)
            await rows.set_failure(one_off.id, AnnouncementState.FAILED, "Missing Access", now)
            await rows.set_failure(daily.id, AnnouncementState.SCHEDULED, "Missing Access", now)
            for n in (5, 7, 8):
                await rows.record_posted((await a.get(1, n)).id, 9000 + n, now)
        order = await expected_order(a, 1)
        every = {x.local_id: x for x in [await a.get(1, n) for n in order]}
        for only in FILTERED:
            want = [n for n in order if kept(only, every[n])]
            seen: list[int] = []
            for offset in range(0, len(want) + PAGE, PAGE):
                page = await a.listing(1, offset, PAGE, only)
                assert page.total == len(want), only
                seen += [x.local_id for x in page.items]
            assert seen == want, only
            assert want, only  # every filter keeps some…
            assert only == ListFilter() or len(want) < len(order), only  # …and leaves some
