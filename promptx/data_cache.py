"""Parsed data files kept between runs: what takes a process a few hundred milliseconds to read
(the phrase sets' TOML, the lexicon's JSON) is pickled under the cache once, and later
processes load the pickle in a few milliseconds.

``cached(name, sources, build)`` returns ``build()``, from ``$PROMPTX_CACHE/data`` when a
pickle made from the same ``sources`` (their paths, sizes and modification times) and the
same promptx version is there; a missing, stale or unreadable pickle is rebuilt, and one that
cannot be written (a read-only cache) is skipped: the cache only ever saves time. The cache
root is ``$PROMPTX_CACHE``, else ``$XDG_CACHE_HOME/promptx``, else ``~/.cache/promptx``
(``cache_root``, also the model cache's). Set ``PROMPTX_DATA_CACHE=0`` to read the files every time.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Callable, Iterable, TypeVar

__all__ = ["cache_root", "cached"]

T = TypeVar("T")
# old pickles of one name beyond this many are removed (a changed data file makes a new key)
KEEP_PER_NAME = 2


def cache_root() -> Path:
    env = os.environ.get("PROMPTX_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "promptx"


def cached(name: str, sources: Iterable[Path], build: Callable[[], T]) -> T:
    """``build()``, or its pickle from an earlier process that read the same ``sources``."""
    if os.environ.get("PROMPTX_DATA_CACHE", "1") == "0":
        return build()
    path = cache_root() / "data" / f"{name}-{_key(sources)}.pickle"
    try:
        with path.open("rb") as handle:
            return pickle.load(handle)
    except FileNotFoundError:
        pass
    except Exception:  # noqa: BLE001 - a damaged or foreign pickle: rebuild it
        pass
    value = build()
    _store(path, value, name)
    return value


def _key(sources: Iterable[Path]) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        made_by = version("promptx")
    except PackageNotFoundError:
        made_by = "source"
    digest = hashlib.sha256(made_by.encode())
    for source in sorted(Path(s) for s in sources):
        stat = source.stat()
        digest.update(f"{source}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:20]


def _store(path: Path, value: object, name: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{name}-", suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temp, path)
    except OSError:
        return
    older = sorted(
        path.parent.glob(f"{name}-*.pickle"), key=lambda p: p.stat().st_mtime, reverse=True
    )
    for stale in older[KEEP_PER_NAME:]:
        stale.unlink(missing_ok=True)
