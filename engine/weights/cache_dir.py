"""Where the engine keeps files between runs: ``$PROMPTX_CACHE`` (default
``$XDG_CACHE_HOME/promptx`` or ``~/.cache/promptx``, the same root as promptx's
model cache). ``evict_oldest`` keeps a folder of such files bounded. Not here: what is stored
(``cost_table``, ``prefix_cache``, ``int4_store``)."""

from __future__ import annotations

import os
import time
from pathlib import Path


def cache_root() -> Path:
    root = os.environ.get("PROMPTX_CACHE")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = Path(xdg).expanduser() / "promptx" if xdg else Path.home() / ".cache" / "promptx"
    return Path(root).expanduser()


def evict_oldest(directory: Path, keep: int) -> None:
    """Remove all but the ``keep`` most recently modified ``*.safetensors`` files in
    ``directory`` (readers touch what they use), and ``*.tmp`` files older than an hour (left by
    a killed writer). Files another process removes meanwhile are skipped."""
    stale = time.time() - 3600
    files = []
    for path in list(directory.glob("*.safetensors")) + list(directory.glob("*.tmp")):
        try:
            modified = path.stat().st_mtime
        except OSError:
            continue
        if path.suffix == ".tmp":
            if modified < stale:
                path.unlink(missing_ok=True)
        else:
            files.append((modified, path))
    for _, path in sorted(files)[: max(0, len(files) - keep)]:
        path.unlink(missing_ok=True)
