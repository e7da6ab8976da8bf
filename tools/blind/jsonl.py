"""JSON Lines files: read (errors name the file and line), write and append."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Iterator

from . import BlindError


def rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(1-based line number, object) for each non-empty line of ``path``."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise BlindError(f"cannot read {path}: {exc.strerror or exc}") from None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BlindError(f"{path}:{number}: not JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise BlindError(f"{path}:{number}: not a JSON object")
        yield number, row


def read(path: Path) -> list[dict[str, Any]]:
    """Every object of ``path``."""
    return [row for _, row in rows(path)]


def write(path: Path, objects: Iterable[dict[str, Any]]) -> None:
    """Write ``objects`` to ``path`` (replacing it), one per line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(dumps(o) + "\n" for o in objects), encoding="utf-8")


def append(path: Path, objects: Iterable[dict[str, Any]]) -> None:
    """Append ``objects`` to ``path``, one per line, flushed (so a run can resume)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        for o in objects:
            out.write(dumps(o) + "\n")
            out.flush()


def dumps(obj: dict[str, Any]) -> str:
    """One line of JSON, non-ASCII kept readable."""
    return json.dumps(obj, ensure_ascii=False, default=str)
