"""``python -m bot [SUBCOMMAND]``: run crier (settings from the environment and .env), or
one of the operator's subcommands (see :mod:`bot.app.cli`)."""

import sys

from .app import main

sys.exit(main())
