"""Readers' labels: RUN_DIR/labels/part-K.<reader>.jsonl, read and checked against the guide.

A label row is {"id", "faithful": bool, "problems": [kinds], "quality": 1-5, "note": str}; the kinds
are the guide's: added_subject, lost, changed, incoherent, form. A malformed row is an error naming
its file and line. Rows that break the guide's own rules without being malformed (an unfaithful
item without a problem or with quality above 2, a faithful one with problems) are kept and listed
as warnings.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from . import BlindError

PROBLEMS = ("added_subject", "lost", "changed", "incoherent", "form")


@dataclass(frozen=True)
class Label:
    """One reader's label of one item."""

    reader: str
    faithful: bool
    problems: tuple[str, ...]
    quality: int


def reader_of(path: Path) -> str:
    """The reader a label file belongs to: ``part-1.alice.jsonl`` -> ``alice``."""
    parts = path.name.removesuffix(".jsonl").split(".", 1)
    if len(parts) != 2 or not parts[1]:
        raise BlindError(f"{path}: name label files part-K.<reader>.jsonl")
    return parts[1]


def check(row: object, known: set[str]) -> str | None:
    """What is wrong with a label row, or None."""
    if not isinstance(row, dict):
        return "not a JSON object"
    if row.get("id") not in known:
        return f"unknown id {row.get('id')!r}"
    if not isinstance(row.get("faithful"), bool):
        return "faithful must be true or false"
    quality = row.get("quality")
    if isinstance(quality, bool) or not isinstance(quality, int) or not 1 <= quality <= 5:
        return "quality must be an integer 1-5"
    problems = row.get("problems", [])
    if not isinstance(problems, list) or any(p not in PROBLEMS for p in problems):
        return f"problems must be a list of {', '.join(PROBLEMS)}"
    return None


def warning(row: dict) -> str | None:
    """Where a well-formed row breaks the guide's rules."""
    if not row["faithful"] and not row.get("problems"):
        return "unfaithful without a problem"
    if not row["faithful"] and row["quality"] > 2:
        return "unfaithful with quality above 2"
    if row["faithful"] and row.get("problems"):
        return "faithful with problems"
    return None


def read_labels(folder: Path, known: set[str]) -> tuple[dict[str, list[Label]], list[str]]:
    """Item id -> its labels (one per reader); and the warnings. Raises on malformed rows."""
    files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
    if not files:
        raise BlindError(f"no label files in {folder}")
    labels: dict[str, list[Label]] = {}
    errors, warnings, seen = [], [], set()
    for path in files:
        reader = reader_of(path)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                errors.append(f"{path}:{number}: not JSON ({exc.msg})")
                continue
            problem = check(row, known)
            if problem is None and (reader, row["id"]) in seen:
                problem = f"reader {reader!r} labelled {row['id']} twice"
            if problem:
                errors.append(f"{path}:{number}: {problem}")
                continue
            seen.add((reader, row["id"]))
            if warning(row):
                warnings.append(f"{path.name}:{number}: {warning(row)}")
            labels.setdefault(row["id"], []).append(
                Label(reader, row["faithful"], tuple(row.get("problems", [])), row["quality"])
            )
    if errors:
        raise BlindError(f"{len(errors)} bad label row(s):\n" + "\n".join(errors))
    return labels, warnings
