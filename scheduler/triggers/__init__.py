"""Recurrence triggers: pure functions from an instant to the next (or latest) fire time.

A trigger never touches a clock, a database or an event loop; it only answers questions
about a fixed, infinite set of *fire times* (aware instants):

* :class:`Cron` — a standard 5-field cron expression read as **local wall-clock time in an
  IANA time zone**.  Daylight-saving transitions follow one rule, stated in terms of the
  naive local wall times the expression matches:

  - a wall time that does not exist that day (it falls in a spring-forward gap) is
    **skipped** — the job does not run that day, it is not moved to the jump instant;
  - a wall time that happens twice (fall-back) fires **once**, at its *first* occurrence
    (``fold=0``); the repeated pass of the hour produces nothing.

  Formally: with ``E(w)`` the instant of wall time ``w`` read with ``fold=0``, the fire
  times are ``{E(w) : w matches the expression and w exists in the zone}``.  ``E``
  restricted to existing wall times is strictly increasing, so fire times are ordered
  exactly like their wall times and no wall time ever fires twice.

* :class:`Interval` — the absolute-time lattice ``anchor + k * every`` for every integer
  ``k`` (unaffected by DST), computed with exact integer microseconds.

Every datetime a trigger returns is aware and in UTC.  Every datetime it accepts must be
aware; a naive one raises :class:`~scheduler.errors.InvalidSchedule`.

Cron field syntax (validated here, with messages naming the field and the reason):
numbers, ``*``, ranges ``a-b``, steps ``*/n``, ``a-b/n`` and ``a/n`` (``a`` up to the
field's maximum), comma lists, month names ``JAN``-``DEC`` and day names ``SUN``-``SAT``
(case-insensitive; ``SUN`` at the end of a range means 7), day-of-week 0-7 (0 and 7 are
Sunday), ``L`` (last day of the month) in the day-of-month field, and the macros
``@hourly @daily @midnight @weekly @monthly @yearly @annually``.  When both day-of-month
and day-of-week are restricted (neither covers every value), a day matches if *either*
matches (Vixie cron); when only one is restricted, only that one applies.  Whether a field
is restricted depends on the set of values it denotes, not on its spelling (``1-31`` is the
same as ``*``).  Expressions that can never fire (``0 0 30 2 *``) are rejected.

Two calendar rules that five fields cannot say are keyword arguments of :class:`Cron`
(they restrict the *dates* the expression matches; times and the DST rule are unchanged):

* ``nth=(2, 4)``: a matching weekday counts only if it is the 2nd or 4th of its weekday in
  its month (``-1``: the last), e.g. ``Cron("0 9 * * 4", tz, nth=(2, 4))`` for 09:00 on
  the 2nd and 4th Thursday;
* ``step=DateStep(2, "week", date(2026, 12, 1))``: only every 2nd local week (Monday to
  Sunday), counted from the week of that date, e.g. every other Tuesday at 09:00; also
  ``"day"`` (every n-th local date) and ``"month"`` (every n-th calendar month).  Unlike an
  :class:`Interval` of 14 days, this keeps the local time of day across DST.

Both triggers take ``exclude=[(start, end), ...]``: spans of time (aware, both ends
included) in which they do not fire, e.g. a holiday, or one occurrence named by its instant
(``(t, t)``).  A fire time a span holds is left out of :meth:`Trigger.next_after`,
:meth:`Trigger.latest_at_or_before` and :meth:`Interval.count_between` alike; the spans are
kept in UTC, sorted and merged, and stored in the spec, so a schedule never materializes an
excluded time.  Each span met is stepped over whole (the work does not grow with the fire
times inside it).

The expression is iterated by :mod:`croniter` on *naive* wall times only (a canonical
number-list form of the parsed fields is handed to it, so it sees exactly the schedule that
was validated; the parsing, validation and croniter walkers are in
:mod:`scheduler.triggers._expr`); all time-zone logic is :class:`Cron`'s
(:mod:`scheduler.triggers._cron`). The calendar rules are in ``_calendar``, the stored form of
a trigger (its spec) in ``_spec``.
"""

from ._base import Trigger, validate_timezone
from ._calendar import DateStep
from ._cron import Cron
from ._expr import CRON_MACROS as CRON_MACROS  # the bot's parsers read it
from ._interval import Interval
from ._spec import trigger_from_json, trigger_from_spec

__all__ = [
    "Cron",
    "DateStep",
    "Interval",
    "Trigger",
    "trigger_from_json",
    "trigger_from_spec",
    "validate_timezone",
]
