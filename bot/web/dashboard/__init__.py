"""The web dashboard: server managers manage their announcements in a browser, the
instance's operators see the scheduler's jobs and schedules.

Served by the bot process on the same aiohttp application as ``/healthz`` and ``/metrics``
(:func:`add_dashboard` adds its routes), when ``DISCORD_CLIENT_SECRET`` is set. Every change
goes through the same domain code and validation as the slash commands
(:func:`bot.requests.validation.check_member_request`,
:class:`bot.announcements.Announcements`), and is answered with the same words. Pages are
rendered on the server (Jinja2, autoescaped) with plain forms; no script runs on them.
"""

from .core import Dashboard, add_dashboard

__all__ = ["Dashboard", "add_dashboard"]
