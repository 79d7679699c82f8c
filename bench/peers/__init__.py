"""The peers that ``bench/compare_bench.py`` measures side by side with this scheduler.

Each module offers the same coroutines (``throughput``, ``lateness``, ``idle``, ``startup``)
and a synchronous ``build`` that writes many pending jobs in the peer's own table format, so
the comparison runs every peer through the same steps, each in a fresh subprocess.
"""
