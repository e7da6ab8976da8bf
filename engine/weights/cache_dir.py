"""Where the engine keeps files between runs: ``$PROMPTX_CACHE`` (default
``$XDG_CACHE_HOME/promptx`` or ``~/.cache/promptx``, the same root as promptx's
model cache). Not here: what is stored (``cost_table``, ``prefix_cache``)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    root = os.environ.get("PROMPTX_CACHE")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = Path(xdg).expanduser() / "promptx" if xdg else Path.home() / ".cache" / "promptx"
    return Path(root).expanduser()
