"""The used set: prompts the project has already seen, which a blind reading must not draw.

A prompt is compared in a normal form (lower case, whitespace collapsed, trailing periods
stripped). The set holds the prompts of:

- tests/data/faithfulness/*.jsonl (field ``prompt``, or ``prompt_ref`` {file, 1-based line} into
  the shared data);
- data/tuning/** (field ``input``; and the public line its ``ref`` "file:line" points at);
- promptx/suites/* and data/eval/** (every JSON Lines file, field ``prompt``; this includes the
  blind registry data/eval/blind/used.jsonl and any reading's prompts.jsonl kept there);
- the evaluation slices docs/quality.md and tools/check_pairs.py read straight from the shared
  data: the first 200 lines of vbench_all_dimension.txt and the first 100 PartiPrompts;
- the registry given with --registry, when it lies elsewhere.

Fields read anywhere: prompt, input, short, original, original_prompt.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from . import ROOT, jsonl
from .sources import lines_of

FIELDS = ("prompt", "input", "short", "original", "original_prompt")
BENCHMARK = (("vbench_all_dimension.txt", 200), ("partiprompts.tsv", 100))


def normal(text: str) -> str:
    """The form prompts are compared in."""
    return re.sub(r"\s+", " ", str(text)).strip().lower().rstrip(". ").strip()


def files(root: Path = ROOT) -> list[Path]:
    """Every JSON Lines file the used set reads from the repository."""
    found = sorted((root / "tests" / "data" / "faithfulness").glob("*.jsonl"))
    found += sorted((root / "data" / "tuning").rglob("*.jsonl"))
    found += sorted(p for p in (root / "promptx" / "suites").glob("*") if p.suffix == ".jsonl")
    found += sorted((root / "data" / "eval").rglob("*.jsonl"))
    return found


def public_line(data: Path, ref: str) -> str | None:
    """The prompt a ``file:line`` (or ``{file, line}``) reference into the shared prompts names, if
    readable."""
    name, _, number = ref.rpartition(":")
    if not number.isdigit():
        return None
    name = name.removeprefix("prompts/")
    path = data / "prompts" / name
    if not path.is_file():
        path = data / "prompts" / "t2i_compbench" / name
    if not path.is_file():
        return None
    if path.suffix == ".json":
        entries = _json(path)
        index = int(number)
        return entries[index].get("prompt_en") if 0 <= index < len(entries) else None
    lines = lines_of(path)
    index = int(number) - 1
    return lines[index].split("\t")[0] if 0 <= index < len(lines) else None


_JSON: dict[Path, list] = {}


def _json(path: Path) -> list:
    if path not in _JSON:
        _JSON[path] = json.loads(path.read_text(encoding="utf-8"))
    return _JSON[path]


def prompts_of(row: dict, data: Path) -> list[str]:
    """The prompts one row names, by value or by reference."""
    found = [row[f] for f in FIELDS if isinstance(row.get(f), str)]
    ref = row.get("prompt_ref")
    if isinstance(ref, dict) and "file" in ref and "line" in ref:
        found.append(public_line(data, f"{ref['file']}:{ref['line']}"))
    if isinstance(row.get("ref"), str) and not row["ref"].startswith("images/"):
        found.append(public_line(data, row["ref"]))
    return [p for p in found if p]


def benchmark(data: Path) -> set[str]:
    """The evaluation slices read from the shared data directly."""
    seen: set[str] = set()
    for name, n in BENCHMARK:
        path = data / "prompts" / name
        if path.is_file():
            first = 1 if name.endswith(".tsv") else 0
            seen |= {
                normal(line.split("\t")[0])
                for line in lines_of(path)[first : first + n]
                if line.strip()
            }
    return seen


def used_set(data: Path, registry: Path | None = None, root: Path = ROOT) -> set[str]:
    """Every used prompt, in normal form."""
    paths = files(root)
    if (
        registry is not None
        and registry.is_file()
        and registry.resolve() not in {p.resolve() for p in paths}
    ):
        paths.append(registry)
    seen = benchmark(data)
    for path in paths:
        for row in jsonl.read(path):
            seen |= {normal(p) for p in prompts_of(row, data)}
    seen.discard("")
    return seen
