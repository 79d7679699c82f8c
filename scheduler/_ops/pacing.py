"""Pacing: jobs that share a pace key start at least their spacing apart, in due order,
across every process that shares the store.

A key's next open slot is a row of ``scheduler_pace``. The claim takes it in its own
transaction: a paced job is claimable only while it is its key's first pending job (in due
order), is due, and its key's slot is open; claiming it pushes the slot on by the job's
spacing. A job waiting for its slot is therefore plain ``pending``: it holds no lease and no
worker slot, and the driver's next wake-up is the time the slot opens (:func:`next_start`).
Among the keys whose first job may start, a higher priority goes first (:func:`heads`).

Each start takes a slot: a retry, or a re-run after a lost lease, takes a new one when it
runs again; a job canceled before it ran takes none; a run handed back unstarted (at
shutdown) has taken its slot. On PostgreSQL the slot is taken under the pace row's lock,
so two claimers of one key never both start within the spacing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._codec import optional_float
from ..models import JobKind
from ..store_types import Op, OpState, Q

if TYPE_CHECKING:
    from collections.abc import Sequence


@dataclass(frozen=True, slots=True)
class Plan:
    """What a claim reads first, in one query: when the next paced job may start, when the
    next job under a concurrency limit may, the next schedule fire, and which of the job
    classes hold pending jobs of a priority other than 0 (those are claimed by priority;
    without them a claim takes due order alone)."""

    start: float | None
    """When the next paced job may start (see :func:`next_start`)."""
    limited_start: float | None
    """When the next job under a concurrency limit may start: the earliest first pending
    job of a key with a place free (None if there is none; see :mod:`.limits`)."""
    next_tick: float | None
    """The next fire time of an active schedule (None if there is none)."""
    ranked: frozenset[JobKind]
    """The kinds that have unpaced pending jobs of a priority other than 0."""
    ranked_paced: bool
    """Whether a pending paced job has a priority other than 0."""


def plan(st: OpState, include_actions: bool = True) -> Op[Plan]:
    """The :class:`Plan` at ``st.now``. Its cost follows the keys whose slot is still ahead
    and the jobs queued behind them, not the number of keys or of pending jobs."""
    params = {
        "actions": int(include_actions),
        "now": st.now,
        "lease_now": st.lease_now,
        "lease_offset": st.lease_offset,
    }
    row = yield Q("next_paced", params, "one")
    if row is None:
        return Plan(None, None, None, frozenset(), ranked_paced=False)
    ranked = frozenset(
        kind
        for kind, column in (
            (JobKind.MUTATION, "ranked_mutations"),
            (JobKind.ACTION, "ranked_actions"),
        )
        if row[column]
    )
    return Plan(
        optional_float(row["start_ts"]),
        optional_float(row["limited_start_ts"]),
        optional_float(row["next_fire_ts"]),
        ranked,
        ranked_paced=bool(row["ranked_paced"]),
    )


def heads(st: OpState, mutation_limit: int, action_limit: int, ranked: bool) -> Op[list[Any]]:
    """Up to the given numbers of paced jobs that may start now: each key's first pending
    job, due, its key's slot open (at most one per key), with its priority; by priority then
    due order when ``ranked`` (some paced job has a priority other than 0), else in due
    order. Nothing is taken: see :func:`claim_heads`."""
    if mutation_limit <= 0 and action_limit <= 0:
        return []
    params = {
        "now": st.now,
        "lease_now": st.lease_now,
        "mutations": int(mutation_limit > 0),
        "actions": int(action_limit > 0),
        "limit": mutation_limit + action_limit,
    }
    rows: list[Any] = yield Q("paced_due_ranked" if ranked else "paced_due", params, "all")
    return rows


def claim_heads(
    st: OpState, chosen: Sequence[Any], lease_until: float, process: str | None = None
) -> Op[list[Any]]:
    """Claim the paced jobs ``chosen`` among :func:`heads`, taking each one's key's slot,
    under leases held by ``process``; returns the claimed rows, as ``claim_due`` does. A
    key whose slot another process took since the heads were read is left alone."""
    if not chosen:
        return []
    slots = {
        "pace_keys": [str(h["pace_key"]) for h in chosen],
        "next_starts": [st.lease_now + float(h["pace_spacing"]) for h in chosen],
        "now": st.lease_now,
    }
    taken = {r["pace_key"] for r in (yield Q("take_pace_slots", slots, "all"))}
    ids = [int(h["id"]) for h in chosen if h["pace_key"] in taken]
    if not ids:
        return []
    lease = st.on_lease_clock(lease_until)
    claim = {"job_ids": ids, "now": st.now, "lease_until": lease, "process": process}
    rows: list[Any] = yield Q("claim_paced", claim, "all")
    return rows


def next_start(st: OpState, include_actions: bool = True) -> Op[tuple[float | None, float | None]]:
    """When the next paced job may start: the earliest, over the keys, of the later of its
    first pending job's due time and its slot (None if no paced job is pending; when one may
    start now, a time not after now); and the next fire time of an active schedule (None if
    there is none), read in the same query (see :func:`plan`)."""
    got = yield from plan(st, include_actions)
    return got.start, got.next_tick


def reserve(st: OpState, key: str, spacing: float) -> Op[float]:
    """Reserve the next start of pace key ``key`` (now if its slot is open, else when it
    opens) and push its slot on by ``spacing``: the start reserved. Paced jobs of the key
    start after it too; two reservations never get starts less than ``spacing`` apart."""
    params = {"pace_key": key, "now": st.lease_now, "spacing": spacing}
    row = yield Q("reserve_pace_slot", params, "one")
    return st.off_lease_clock(float(row["start_ts"]))


def prune(st: OpState, before: float) -> Op[None]:
    """Forget slots that opened before ``before``: an absent row is an open slot."""
    yield Q("prune_pace", {"before": st.on_lease_clock(before)})
