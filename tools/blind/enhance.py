"""Enhance every prompt of a reading with each arm: RUN_DIR/outputs/<arm>.jsonl.

One ``promptx.Enhancer()`` serves all arms; every call uses seed 0, the arm's options, the task's
target (t2v -> video, t2i -> image, i2v -> image-to-video, i2i -> image-to-image unless given) and,
for image tasks, the prompt's image and caption. A row records the text, whether promptx fell back,
the wall time of the call and ``result.added`` where the result has it. Re-running resumes: ids
already in an arm's file are skipped (the arm's options must be the same).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

import click

from . import DEFAULT_TARGETS, IMAGE_TASKS, BlindError, jsonl
from .arms import Arm


def jsonable(value: Any) -> Any:
    """``result.added`` (or any value) as plain JSON."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if hasattr(value, "model_dump"):
        return value.model_dump()
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    return str(value)


def done_ids(path: Path, arm: Arm) -> set[str]:
    """Ids already enhanced by ``arm``; refuses a file written with other options."""
    if not path.exists():
        return set()
    rows = jsonl.read(path)
    other = {jsonl.dumps(r.get("options", {})) for r in rows} - {jsonl.dumps(arm.options)}
    if other:
        raise BlindError(
            f"{path} was written with other options ({', '.join(sorted(other))}); "
            f"name this arm differently"
        )
    return {r["id"] for r in rows}


def check_options(arm: Arm) -> None:
    """Refuse options promptx does not know before any model work."""
    from promptx.errors import PromptxError
    from promptx.options import EnhanceOptions

    try:
        EnhanceOptions.of({**arm.options, "seed": 0})
    except PromptxError as exc:
        raise BlindError(f"arm {arm.name!r}: {exc}") from None


def one(enhancer, row: dict, arm: Arm, target: str) -> dict:
    """Enhance one prompt; the outputs row."""
    from promptx.errors import PromptxError

    options = dict(arm.options)
    if row["task"] in IMAGE_TASKS:
        options.update(image=row.get("image"), caption=row.get("caption"))
    start = time.perf_counter()
    try:
        result = enhancer.enhance(row["prompt"], target, seed=0, **options)
    except PromptxError as exc:
        raise BlindError(f"arm {arm.name!r}, prompt {row['id']}: {exc}") from None
    latency = time.perf_counter() - start
    return {
        "id": row["id"],
        "arm": arm.name,
        "task": row["task"],
        "target": target,
        "prompt": row["prompt"],
        "text": result.text,
        "fallback": bool(result.fallback),
        "latency_s": round(latency, 4),
        "added": jsonable(getattr(result, "added", None)),
        "options": arm.options,
    }


def enhance(
    run: Path, arms: list[Arm], targets: dict[str, str] | None = None, enhancer=None
) -> dict[str, dict]:
    """Enhance RUN_DIR's prompts with every arm; per arm: n, median latency, fallbacks (of its whole
    file)."""
    prompts = jsonl.read(run / "prompts.jsonl") if (run / "prompts.jsonl").exists() else None
    if prompts is None:
        raise BlindError(f"no {run / 'prompts.jsonl'}: run 'draw' first")
    targets = {**DEFAULT_TARGETS, **(targets or {})}
    for arm in arms:
        check_options(arm)
    if enhancer is None:
        import promptx

        enhancer = promptx.Enhancer()
    summary = {}
    for arm in arms:
        path = run / "outputs" / f"{arm.name}.jsonl"
        todo = [r for r in prompts if r["id"] not in done_ids(path, arm)]
        with click.progressbar(todo, label=f"{arm.name}", file=sys.stderr, show_pos=True) as bar:
            for row in bar:
                jsonl.append(path, [one(enhancer, row, arm, targets[row["task"]])])
        summary[arm.name] = stats(jsonl.read(path)) if path.exists() else stats([])
    return summary


def stats(rows: list[dict]) -> dict:
    """n, median latency (s) and fallbacks of an arm's rows."""
    latencies = [r["latency_s"] for r in rows]
    return {
        "n": len(rows),
        "median_latency_s": round(statistics.median(latencies), 3) if latencies else None,
        "fallbacks": sum(bool(r["fallback"]) for r in rows),
    }
