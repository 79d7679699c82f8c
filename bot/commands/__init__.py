"""The Discord front door: the slash commands (one Cog per feature), their autocompletes,
transformers, forms and buttons, how the bot answers a member, and the command tree that syncs
them. A handler turns the interaction into a request, has it checked (:mod:`bot.requests`),
calls the domain (:mod:`bot.announcements`) and answers with what :mod:`bot.render` writes."""
