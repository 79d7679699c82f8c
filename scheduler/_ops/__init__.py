"""The scheduler's database logic, written once for every store, as sans-IO operations.

An operation is a generator that yields :class:`~scheduler.store_types.Q` (a named query
and its parameters) and receives each result; it never touches a connection, so every store
runs the same logic with its own executor (see :mod:`scheduler._ops.jobs`). By what they
work on:

- :mod:`~scheduler._ops.jobs`: enqueue, cancel, retry, and what a job's end sets off;
- :mod:`~scheduler._ops.dispatch`: the driver's claims, completions, leases, sweep, pruning;
- :mod:`~scheduler._ops.reads`: jobs as the application reads them, and the metrics' counts;
- :mod:`~scheduler._ops.history`: the run history; :mod:`~scheduler._ops.pacing`: pace keys;
- :mod:`~scheduler._ops.leases`: named leases and the members of lease groups;
- :mod:`~scheduler._ops.schedules` and :mod:`~scheduler._ops.ticks`: recurring schedules;
- :mod:`~scheduler._ops.seeds`: the seeded draws (retry backoff, a replay's PRNG).
"""
