"""``python -m tools.blind``: see ``tools.blind.cli``."""

import sys

from .cli import main

sys.exit(main())
