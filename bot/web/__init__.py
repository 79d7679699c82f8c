"""The bot's HTTP side, served on ``HTTP_ADDRESS``: ``/healthz`` and ``/metrics``
(:mod:`bot.web.observability`) on one server (:mod:`bot.web.server`) that the dashboard
(:mod:`bot.web.dashboard`) adds its pages to."""
