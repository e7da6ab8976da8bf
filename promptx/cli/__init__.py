"""The ``promptx`` command line: one module per command group (``main`` holds the group).

Not here: the SDK (``promptx.enhancer``), the engine.
"""

from .main import main, run

__all__ = ["main", "run"]
