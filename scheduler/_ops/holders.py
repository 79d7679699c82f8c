"""The database side of holder liveness (see :mod:`scheduler._holders`): a holder's recorded
proof, and what a holder found gone loses at once (its named leases, its places in lease
groups, its jobs' leases). Stamps are on the lease clock, as every lease's."""

from __future__ import annotations

from ..store_types import Op, OpState, Q, ReclaimReport
from . import dispatch


def put(st: OpState, holder: str, proof: str) -> Op[str | None]:
    """Record ``proof`` as ``holder``'s; the proof it replaces (None: there was none). The
    commit is announced like a change of pending work, so a holder that was alone hears of
    this one (see :meth:`scheduler._holders.Holders.poke`)."""
    row = yield Q("holder_proof", {"holder": holder}, "one")
    yield Q("put_holder", {"holder": holder, "proof": proof, "now": st.lease_now})
    st.wake = True
    return None if row is None else str(row["proof"])


def proof_of(st: OpState, holder: str) -> Op[str | None]:
    """The proof recorded for ``holder`` (None: none is)."""
    row = yield Q("holder_proof", {"holder": holder}, "one")
    return None if row is None else str(row["proof"])


def proofs(st: OpState) -> Op[dict[str, str]]:
    """Every recorded holder with its proof."""
    rows = yield Q("holder_proofs", {}, "all")
    return {str(r["holder"]): str(r["proof"]) for r in rows}


def replace(st: OpState, holder: str, old: str, new: str) -> Op[bool]:
    """Record ``new`` as ``holder``'s proof (seen now) if ``old`` is still the one recorded;
    whether it was (False: another process found ``old`` gone and forgot it, or it was
    forgotten as not seen for long). ``old == new`` marks the row seen."""
    params = {"holder": holder, "old": old, "proof": new, "now": st.lease_now}
    n = yield Q("replace_holder_proof", params)
    return bool(n)


def expire(
    st: OpState, holder: str, proof: str, process: str | None = None
) -> Op[ReclaimReport | None]:
    """``holder``, whose recorded proof ``proof`` was found gone, loses everything at once:
    its named leases (see :func:`retire`), and every job whose lease it holds is reclaimed
    (as an expired lease is, by ``process``). Fenced by the proof: a holder that proved
    itself again since (a new proof) keeps everything; None then."""
    if not (yield from retire(st, holder, proof)):
        return None
    return (yield from dispatch.reclaim_gone(st, holder, process))


def retire(st: OpState, holder: str, proof: str) -> Op[bool]:
    """``holder`` (its proof still ``proof``) lets go of its named leases: those handed to it
    and not yet confirmed go back to their givers, its others are free now, its requests and
    its places in lease groups are forgotten, and so is its row. Whether its row was still
    there (False: nothing was done)."""
    dropped = yield Q("drop_holder", {"holder": holder, "proof": proof})
    if not dropped:
        return False
    params = {"holder": holder, "now": st.lease_now}
    yield Q("return_handed_leases", params)
    yield Q("free_holder_leases", params)
    yield Q("forget_holder_asks", {"holder": holder})
    yield Q("drop_holder_memberships", {"holder": holder})
    return True


def prune(st: OpState, before: float) -> Op[None]:
    """Forget the holders not seen since ``before`` (on ``now``'s clock)."""
    yield Q("prune_holders", {"before": st.on_lease_clock(before)})
