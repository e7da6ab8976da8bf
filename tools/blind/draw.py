"""Draw fresh prompts for a reading (or take the caller's), write RUN_DIR/prompts.jsonl, record
them.

A draw takes ``n`` prompts per task from the sources of ``sources``, seeded: the share of each
source is proportional to how many fresh prompts it has (largest remainders, ties by the seeded
generator), except that at least ``min_vbench`` of the t2v prompts come from
vbench_all_dimension.txt lines that have both aligned references (``refs``), so that references
can be mixed into the reading. Fresh means not in the used set (``used``) and not drawn twice.
Image tasks often have no fresh prompt with an image: then the draw says so and takes what there is.

Each prompt is appended to the registry (data/eval/blind/used.jsonl unless --registry says
otherwise), so the next draw will not return it.
"""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

from . import GENERATORS, IMAGE_TASKS, ROOT, TASKS, BlindError, jsonl
from .refs import aligned
from .sources import VBENCH, Candidate, candidates
from .used import normal, used_set


def fresh_pool(task: str, data: Path, used: set[str]) -> dict[str, list[Candidate]]:
    """Fresh candidates per source, each prompt once (in the first source that has it)."""
    refs = aligned(data) if task == "t2v" else {}
    seen = set(used)
    pool: dict[str, list[Candidate]] = {}
    for source, found in candidates(task, data).items():
        keep = []
        for c in found:
            key = normal(c.prompt)
            if key in seen or (source == VBENCH and len(refs.get(c.line, {})) < 2):
                continue
            seen.add(key)
            keep.append(c)
        if keep:
            pool[source] = keep
    return pool


def proportional(n: int, sizes: dict[str, int], rng: random.Random) -> dict[str, int]:
    """Split ``n`` over sources in proportion to ``sizes``: floors, then the largest remainders
    (ties by ``rng``)."""
    total = sum(sizes.values())
    n = min(n, total)
    if n <= 0:
        return {s: 0 for s in sizes}
    exact = {s: n * k / total for s, k in sizes.items()}
    share = {s: math.floor(x) for s, x in exact.items()}
    order = sorted(sizes, key=lambda s: (-(exact[s] - share[s]), rng.random()))
    while sum(share.values()) < n:
        for s in order:
            if sum(share.values()) < n and share[s] < sizes[s]:
                share[s] += 1
    return share


def allocate(
    n: int, sizes: dict[str, int], rng: random.Random, minimum: dict[str, int] | None = None
) -> dict[str, int]:
    """Proportional shares of ``n``; a source whose share falls below its ``minimum`` gets the
    minimum and the others split the rest."""
    share = proportional(n, sizes, rng)
    low = {
        s: min(k, sizes[s], n)
        for s, k in (minimum or {}).items()
        if s in sizes and share[s] < min(k, sizes[s], n)
    }
    if not low:
        return share
    rest = proportional(
        n - sum(low.values()), {s: k for s, k in sizes.items() if s not in low}, rng
    )
    return {s: low.get(s, rest.get(s, 0)) for s in sizes}


def draw_task(
    task: str, n: int, data: Path, used: set[str], seed: int, min_vbench: float
) -> list[Candidate]:
    """``n`` fresh prompts of ``task`` (fewer, with a warning, for an image task that has fewer)."""
    if n <= 0:
        return []
    pool = fresh_pool(task, data, used)
    available = sum(len(v) for v in pool.values())
    if available < n:
        if task not in IMAGE_TASKS:
            raise BlindError(f"only {available} fresh {task} prompts left, {n} asked")
        print(
            f"blind: {task}: only {available} fresh prompts with an existing image ({n} asked); "
            f"drawing {available}",
            file=sys.stderr,
        )
        n = available
    rng = random.Random(f"{seed}:{task}")
    minimum = {VBENCH: math.ceil(min_vbench * n)} if task == "t2v" else {}
    shares = allocate(n, {s: len(v) for s, v in pool.items()}, rng, minimum)
    return [
        c
        for s, found in pool.items()
        for c in sorted(rng.sample(found, shares[s]), key=lambda c: c.line)
    ]


def given(path: Path, used: set[str]) -> list[Candidate]:
    """The prompts of a --prompts file, refused when any is used, repeated or malformed."""
    chosen, problems, seen = [], [], set()
    tasks = {**{t: t for t in TASKS}, **{g: t for t, g in GENERATORS.items()}}
    for number, row in jsonl.rows(path):
        prompt, task = str(row.get("prompt", "")).strip(), tasks.get(str(row.get("task", "")))
        if not prompt or task is None:
            problems.append(
                f"{path}:{number}: needs 'prompt' and 'task' (one of {', '.join(TASKS)})"
            )
        elif normal(prompt) in used:
            problems.append(f"{path}:{number}: used prompt: {prompt}")
        elif normal(prompt) in seen:
            problems.append(f"{path}:{number}: repeated prompt: {prompt}")
        elif task in IMAGE_TASKS and not (row.get("image") and Path(row["image"]).is_file()):
            problems.append(f"{path}:{number}: {task} needs an existing 'image'")
        else:
            seen.add(normal(prompt))
            line = row["line"] if isinstance(row.get("line"), int) else number
            chosen.append(
                Candidate(
                    task,
                    str(row.get("source", path.name)),
                    line,
                    prompt,
                    row.get("image"),
                    row.get("caption"),
                )
            )
    if problems:
        raise BlindError(f"{len(problems)} prompt(s) of {path} refused:\n" + "\n".join(problems))
    return chosen


def numbered(chosen: list[Candidate]) -> list[dict]:
    """prompts.jsonl rows: ids ``<task>-NNN`` in task order."""
    rows, count = [], {t: 0 for t in TASKS}
    for c in sorted(chosen, key=lambda c: TASKS.index(c.task)):
        rows.append({"id": f"{c.task}-{count[c.task]:03d}", **c.row()})
        count[c.task] += 1
    return rows


def record(registry: Path, rows: list[dict], run: Path) -> None:
    """Append the drawn prompts to the registry of used prompts."""
    where = (
        str(run.resolve().relative_to(ROOT))
        if run.resolve().is_relative_to(ROOT)
        else str(run.resolve())
    )
    jsonl.append(
        registry,
        (
            {
                "prompt": r["prompt"],
                "task": r["task"],
                "source": r["source"],
                "line": r["line"],
                "run": where,
                "id": r["id"],
            }
            for r in rows
        ),
    )


def draw(
    run: Path,
    counts: dict[str, int],
    *,
    seed: int,
    data: Path,
    registry: Path,
    prompts: Path | None = None,
    min_vbench: float = 0.5,
) -> list[dict]:
    """Draw (or take ``prompts``), write RUN_DIR/prompts.jsonl and record the prompts; the rows
    written."""
    out = run / "prompts.jsonl"
    if out.exists():
        raise BlindError(f"{out} exists: a reading draws once (use a new RUN_DIR)")
    used = used_set(data, registry)
    if prompts is not None:
        chosen = given(prompts, used)
    else:
        chosen = [
            c
            for task in TASKS
            for c in draw_task(task, counts.get(task, 0), data, used, seed, min_vbench)
        ]
    if not chosen:
        raise BlindError("nothing to draw")
    rows = numbered(chosen)
    jsonl.write(out, rows)
    record(registry, rows, run)
    return rows
