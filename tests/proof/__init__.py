"""Proof under fire: crash loops, races, bad-input fuzz and security suites.

The fast subset runs in CI; ``CRIER_FULL=1`` runs every suite at full length (see
``conftest.py``)."""
