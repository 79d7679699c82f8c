"""A member's request, from a slash command or a dashboard form, turned into a checked draft:
who may do it, where it may post, what it posts (text, files, mentions) and when. Shared by
:mod:`bot.commands` and :mod:`bot.web`, so both give the same answers.

Each front door builds the request once (:mod:`.request`: who asks, where, in which locale,
the options); the checks (:mod:`.validation`, :mod:`.checks`, :mod:`.destinations`) take it
and never see a ``discord.Interaction``."""
