"""The public prompt sets a blind reading draws from, as candidates per task and source.

Sources (files under ``<data>/prompts`` unless said otherwise):

- t2v: vbench_all_dimension.txt (has reference enhancements, see ``refs``), vbench2_full_text.txt;
- t2i: partiprompts.tsv (the Prompt column), t2i_compbench/*_val.txt, geneval_prompts.txt;
- i2v: vbench_i2v_full_info.json entries whose image is in ``<data>/images``, and rows of
  data/eval/vbench_i2v_50.jsonl with an existing ``image``;
- i2i: rows of data/eval/i2i_edits*.jsonl with an existing ``image``.

``line`` is where the prompt is: the 1-based line of a text or JSON Lines file (the header of
partiprompts.tsv is line 1), the 0-based entry of vbench_i2v_full_info.json (as data/tuning's
``ref`` fields count them).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from . import ROOT, BlindError, jsonl

VBENCH = "vbench_all_dimension.txt"


@dataclass(frozen=True)
class Candidate:
    """One prompt a draw may pick."""

    task: str
    source: str
    line: int
    prompt: str
    image: str | None = None
    caption: str | None = None

    def row(self) -> dict:
        """The fields of a prompts.jsonl row (without ``id``); image and caption only when set."""
        return {k: v for k, v in asdict(self).items() if v is not None}


def lines_of(path: Path) -> list[str]:
    """The lines of a text file (a last line without a newline counts)."""
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise BlindError(f"cannot read {path}: {exc.strerror or exc}") from None


def text_file(data: Path, name: str, task: str) -> list[Candidate]:
    """One prompt per non-empty line."""
    return [
        Candidate(task, name, number, line.strip())
        for number, line in enumerate(lines_of(data / "prompts" / name), 1)
        if line.strip()
    ]


def parti(data: Path) -> list[Candidate]:
    """The Prompt column of partiprompts.tsv."""
    name = "partiprompts.tsv"
    lines = lines_of(data / "prompts" / name)
    if not lines or lines[0].split("\t")[0] != "Prompt":
        raise BlindError(f"{data / 'prompts' / name}: expected a header starting with 'Prompt'")
    return [
        Candidate("t2i", name, number, line.split("\t")[0].strip())
        for number, line in enumerate(lines[1:], 2)
        if line.split("\t")[0].strip()
    ]


def compbench(data: Path) -> list[Candidate]:
    """Every t2i_compbench/*_val.txt, each its own source."""
    files = sorted((data / "prompts" / "t2i_compbench").glob("*_val.txt"))
    return [c for f in files for c in text_file(data, f"t2i_compbench/{f.name}", "t2i")]


def vbench_i2v(data: Path) -> list[Candidate]:
    """VBench-I2V entries whose image file is in ``<data>/images`` (the set ships no images)."""
    path = data / "prompts" / "vbench_i2v_full_info.json"
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise BlindError(f"cannot read {path}: {exc}") from None
    found = []
    for index, entry in enumerate(entries):
        image = data / "images" / entry.get("image_name", "")
        if entry.get("image_name") and image.is_file():
            found.append(
                Candidate(
                    "i2v",
                    path.name,
                    index,
                    entry["prompt_en"].strip(),
                    str(image),
                    Path(entry["image_name"]).stem,
                )
            )
    return found


def eval_rows(relative: str, task: str) -> list[Candidate]:
    """Rows of a data/eval JSON Lines file whose ``image`` (relative to the file) exists."""
    path = ROOT / relative
    if not path.is_file():
        return []
    found = []
    for number, row in jsonl.rows(path):
        image = (path.parent / row["image"]).resolve() if row.get("image") else None
        if image is not None and image.is_file() and str(row.get("prompt", "")).strip():
            found.append(
                Candidate(
                    task, relative, number, row["prompt"].strip(), str(image), row.get("caption")
                )
            )
    return found


LOADERS: dict[str, list[Callable[[Path], list[Candidate]]]] = {
    "t2v": [
        lambda d: text_file(d, VBENCH, "t2v"),
        lambda d: text_file(d, "vbench2_full_text.txt", "t2v"),
    ],
    "t2i": [parti, compbench, lambda d: text_file(d, "geneval_prompts.txt", "t2i")],
    "i2v": [vbench_i2v, lambda d: eval_rows("data/eval/vbench_i2v_50.jsonl", "i2v")],
    "i2i": [
        lambda d: [
            c
            for f in sorted((ROOT / "data" / "eval").glob("i2i_edits*.jsonl"))
            for c in eval_rows(str(f.relative_to(ROOT)), "i2i")
        ]
    ],
}


def candidates(task: str, data: Path) -> dict[str, list[Candidate]]:
    """Every candidate of ``task``, grouped by source (in a fixed order)."""
    if not (data / "prompts").is_dir():
        raise BlindError(f"no prompts folder in {data} (give the shared data folder with --data)")
    grouped: dict[str, list[Candidate]] = {}
    for load in LOADERS[task]:
        for c in load(data):
            grouped.setdefault(c.source, []).append(c)
    return grouped
