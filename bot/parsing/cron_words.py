"""Cron expressions in English, for the words stored with a rule (the history, the export):
``0 9 * * 1-5`` reads as "at 09:00, Monday through Friday". They are the words
:mod:`bot.parsing.spoken` says to an English reader; other readers get them said again in
their language from the rule."""

from __future__ import annotations

from scheduler.triggers import CRON_MACROS

from ..i18n import speaking
from .spoken import cron_words


def describe_cron(expr: str, tz_name: str) -> str:
    """Describe a 5-field cron expression in English, followed by its zone.

    Common shapes read naturally (``"every day at 09:00 (Europe/London)"``,
    ``"at 09:00, Monday through Friday (UTC)"``, ``"every 15 minutes (UTC)"``,
    ``"at 12:00 on the last day of the month (UTC)"``); anything else is shown as
    ``"cron `expr` (zone)"``.
    """
    normalized = " ".join(expr.split())
    fields = CRON_MACROS.get(normalized.lower(), normalized).upper().split()
    with speaking(None):  # stored: English whatever the member's language
        words = cron_words(fields) if len(fields) == 5 else None
    return f"{words or f'cron `{normalized}`'} ({tz_name})"
