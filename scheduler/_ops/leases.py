"""The database side of named leases (see :mod:`scheduler.leases`): each operation is one
or two named queries, run by the store like every other operation. Expiries are stamped and
compared on the lease clock (:attr:`OpState.lease_offset`) and read back on ``now``'s."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..store_types import Op, OpState, Q

if TYPE_CHECKING:
    from collections.abc import Sequence


@dataclass(frozen=True, slots=True)
class LeaseRow:
    """A lease as it stands in the database."""

    key: str
    holder: str
    expires_at: float
    handed_from: str | None
    """The holder that handed it over, until the new holder confirms it has started."""
    wanted_by: str | None
    """A member short of its fair share that asked for it."""


def take(st: OpState, key: str, holder: str, ttl: float) -> Op[bool]:
    """Take ``key`` if it is free, expired, or already ``holder``'s."""
    row = yield Q(
        "take_lease", {"lease_key": key, "holder": holder, "now": st.lease_now, "ttl": ttl}, "one"
    )
    return row is not None


def renew(st: OpState, keys: Sequence[str], holder: str, ttl: float) -> Op[set[str]]:
    """Extend those of ``keys`` that ``holder`` still holds; the set of them."""
    if not keys:
        return set()
    params = {"keys": list(keys), "holder": holder, "now": st.lease_now, "ttl": ttl}
    rows = yield Q("renew_leases", params, "all")
    return {str(r["lease_key"]) for r in rows}


def release(st: OpState, key: str, holder: str) -> Op[None]:
    yield Q("release_lease", {"lease_key": key, "holder": holder})


def leases_of(st: OpState, keys: Sequence[str]) -> Op[dict[str, LeaseRow]]:
    rows = yield Q("leases_of", {"keys": list(keys)}, "all")
    return {
        str(r["lease_key"]): LeaseRow(
            str(r["lease_key"]),
            str(r["holder"]),
            st.off_lease_clock(float(r["expires_at"])),
            r["handed_from"],
            r["wanted_by"],
        )
        for r in rows
    }


def want(st: OpState, key: str, holder: str) -> Op[bool]:
    changed = yield Q("want_lease", {"lease_key": key, "holder": holder, "now": st.lease_now})
    return bool(changed)


def hand(st: OpState, key: str, holder: str, ttl: float) -> Op[bool]:
    params = {"lease_key": key, "holder": holder, "now": st.lease_now, "ttl": ttl}
    changed = yield Q("hand_lease", params)
    return bool(changed)


def unwant(st: OpState, key: str, holder: str) -> Op[None]:
    yield Q("unwant_lease", {"lease_key": key, "holder": holder})


def confirm(st: OpState, key: str, holder: str) -> Op[None]:
    yield Q("confirm_lease", {"lease_key": key, "holder": holder})


def join(st: OpState, group: str, holder: str, ttl: float) -> Op[list[str]]:
    """Be a live member of ``group`` for ``ttl`` more seconds; its live members, in order."""
    params = {"lease_group": group, "holder": holder, "now": st.lease_now, "ttl": ttl}
    yield Q("join_group", params)
    return (yield from members(st, group))


def members(st: OpState, group: str) -> Op[list[str]]:
    """The live members of ``group``, in holder order."""
    rows = yield Q("group_members", {"lease_group": group, "now": st.lease_now}, "all")
    return [str(r["holder"]) for r in rows]


def leave(st: OpState, group: str, holder: str) -> Op[None]:
    yield Q("leave_group", {"lease_group": group, "holder": holder})


def prune_members(st: OpState, before: float) -> Op[None]:
    yield Q("prune_lease_members", {"before": st.on_lease_clock(before)})
