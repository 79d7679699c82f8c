"""crier: durable scheduled announcements for Discord, on the ``scheduler`` package."""
