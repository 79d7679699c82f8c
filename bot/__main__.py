"""``python -m bot``: run crier (settings from the environment and .env)."""

import sys

from .app import main

sys.exit(main())
