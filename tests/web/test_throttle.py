"""The dashboard's bounded memory of who asked (bot.web.dashboard.throttle) and the login's
signed state (bot.web.dashboard.oauth), on an injected clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from aiohttp.test_utils import make_mocked_request
from multidict import CIMultiDict

from bot.web.dashboard.oauth import DiscordOAuth
from bot.web.dashboard.throttle import ExpiringTable, RateLimit, client_address
from scheduler.testing import FakeClock

NOW = datetime(2030, 3, 1, 12, 0, tzinfo=UTC)


def test_an_expiring_table_forgets_and_shrinks() -> None:
    clock = FakeClock(NOW)
    table: ExpiringTable[int, str] = ExpiringTable(clock)
    for n in range(1000):
        table.put(n, "x", 60)
    assert table.get(5) == "x"
    clock.advance(timedelta(seconds=60))
    assert table.get(5) is None  # expired: never returned
    for n in range(1000, 3000):
        table.put(n, "y", 60)
    assert len(table) <= 2000 + 64  # the first thousand swept as the table grew
    assert table.items()[0] == (1000, "y")


def test_a_rate_limit_counts_per_key_and_forgets_its_keys() -> None:
    clock = FakeClock(NOW)
    limit: RateLimit[str] = RateLimit(clock, 3, 60)
    assert [limit.allow("a") for _ in range(4)] == [True, True, True, False]
    assert limit.allow("b")
    assert limit.full("a")
    clock.advance(timedelta(seconds=60))
    assert not limit.full("a")
    for n in range(500):
        limit.note(f"k{n}")
    clock.advance(timedelta(seconds=61))
    for n in range(500):
        limit.note(f"m{n}")
    assert len(limit) <= 600


def request(peer: str, forwarded: str | None = None):  # type: ignore[no-untyped-def]
    headers = CIMultiDict({"X-Forwarded-For": forwarded} if forwarded else {})

    class Transport:
        def get_extra_info(self, name: str, default: object = None) -> object:
            return (peer, 5555) if name == "peername" else default

    return make_mocked_request("GET", "/login", headers=headers, transport=Transport())


def test_x_forwarded_for_is_taken_only_from_a_proxy_on_loopback_or_a_private_network() -> None:
    assert client_address(request("127.0.0.1", "198.51.100.4"), behind_proxy=True) == (
        "198.51.100.4"
    )
    # Its last address: the one the proxy added (a client writes whatever it likes before).
    assert client_address(request("::1", "1.2.3.4, 198.51.100.4"), behind_proxy=True) == (
        "198.51.100.4"
    )
    assert client_address(request("127.0.0.1", "198.51.100.4"), behind_proxy=False) == ("127.0.0.1")
    assert client_address(request("172.18.0.5", "198.51.100.4"), behind_proxy=True) == (
        "198.51.100.4"
    )  # a proxy in front of a container
    assert client_address(request("8.8.8.8", "198.51.100.4"), behind_proxy=True) == (
        "8.8.8.8"
    )  # a peer from the Internet writes what it likes
    assert client_address(request("127.0.0.1", "not an address"), behind_proxy=True) == (
        "127.0.0.1"
    )


def test_a_login_state_is_signed_and_timed() -> None:
    oauth = DiscordOAuth("http://x", "http://x/api", "client-secret-1")
    now = NOW.timestamp()
    state = oauth.new_state(now)
    assert oauth.state_made(state, now + 599, 600)
    assert not oauth.state_made(state, now + 601, 600)  # expired
    made, nonce, mac = state.split(".")
    assert not oauth.state_made(f"{made}.{nonce}x.{mac}", now, 600)  # tampered
    assert not oauth.state_made(f"{int(made) + 1}.{nonce}.{mac}", now + 1, 600)
    other = DiscordOAuth("http://x", "http://x/api", "client-secret-2")
    assert not other.state_made(state, now, 600)  # another application's key
    assert not oauth.state_made("made-up", now, 600)
    assert not oauth.state_made("", now, 600)
