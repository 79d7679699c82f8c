"""crier's command line: ``crier [SUBCOMMAND]`` (the wheel's console script) and
``python -m bot [SUBCOMMAND]``: run crier (settings from the environment and .env), or one
of the operator's subcommands (see :mod:`bot.app.cli`).

Importing this module runs nothing: the console script calls :func:`main`, and
``python -m bot`` runs the block at the end."""

import sys

from .app import cli


def main() -> int:
    """The ``crier`` command (the wheel's console script): the usage names it ``crier``."""
    return cli.main(prog="crier")


if __name__ == "__main__":
    sys.exit(cli.main(prog="python -m bot"))
