"""Tuning pairs: the (short prompt, enhanced prompt) files ``promptx tune`` trains on.

JSON Lines, one ``TuningPair`` per line (format and data card:
data/tuning/README.md); a folder holds ``train/`` and ``heldout/``
subfolders. ``read_pairs`` reads files or folders and names the file and
line of a malformed row (``PairFileError``).

Not here: checking pairs against the assessment (tools/check_pairs.py) or
training (``promptx.tune``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import InvalidInputError

__all__ = ["PairFileError", "PairRow", "TuningPair", "pair_files", "read_pairs"]

Source = Literal[
    "team", "partiprompts", "t2i-compbench", "vbench-category", "vbench2", "vbench-i2v"
]


class PairFileError(InvalidInputError):
    """A pair file is missing, unreadable or has a malformed line."""


class TuningPair(BaseModel):
    """One (short prompt, enhanced prompt) pair written by the team."""

    model_config = ConfigDict(extra="forbid", strict=True)
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    target: str
    input: str = Field(min_length=1)
    output: str = Field(min_length=1)
    image: str | None = None  # caption of the input image (i2v, i2i)
    style: str | None = None
    source: Source
    ref: str | None = None  # "file:line" of a public input
    author: str = Field(min_length=1)


@dataclass(frozen=True)
class PairRow:
    pair: TuningPair
    where: str  # "file:line"

    @property
    def split(self) -> str:
        return Path(self.where.rsplit(":", 1)[0]).parent.name


def pair_files(paths) -> list[Path]:
    """The .jsonl files of ``paths`` (files, or folders searched recursively), sorted."""
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            files += sorted(path.rglob("*.jsonl"))
        elif path.is_file():
            files.append(path)
        else:
            raise PairFileError(f"{path}: no such pair file or folder")
    return sorted(set(files))


def read_pairs(paths, *, strict: bool = True) -> tuple[list[PairRow], list[str]]:
    """Every pair of ``paths`` and the problems of malformed lines ("file:line: why").

    With ``strict`` the first malformed line raises PairFileError instead.
    """
    rows, problems = [], []
    for file in pair_files(paths):
        try:
            lines = file.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise PairFileError(f"{file}: cannot read ({exc})") from None
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            where = f"{file}:{n}"
            try:
                rows.append(PairRow(TuningPair.model_validate(json.loads(line)), where))
            except (json.JSONDecodeError, ValidationError) as exc:
                problem = f"{where}: {' '.join(str(exc).split())[:300]}"
                if strict:
                    raise PairFileError(problem) from None
                problems.append(problem)
    return rows, problems
