"""``promptx serve``: one loaded enhancer shared over HTTP (extra ``promptx[serve]``).

Importing this package needs FastAPI; ``promptx.cli.serve`` checks for it first.
"""

from .app import create_app
from .state import ServeLimits, ServerState

__all__ = ["ServeLimits", "ServerState", "create_app"]
