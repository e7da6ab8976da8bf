"""Pool a reading's texts into blind batches for readers, and the key that unblinds them.

Pooled: every arm's outputs (RUN_DIR/outputs/*.jsonl) and, for t2v prompts drawn from
vbench_all_dimension.txt, the aligned references "gpt4o" and "wan" (``refs``). Identical
(prompt, text) pairs become one item that remembers all its sources. Items get random opaque ids
(seeded), are shuffled and split into K parts:

- RUN_DIR/batches/part-K.jsonl: only {"id", "task", "generator", "short", "enhanced", "image"
  (image tasks)}: nothing that names an arm or a reference;
- RUN_DIR/batches/GUIDE.md: the blind guide, and where readers write their labels
  (RUN_DIR/labels/part-K.<reader>.jsonl);
- RUN_DIR/key.jsonl: {"id", "sources", "prompt_id", "task", "part"}, kept out of batches/.
"""

from __future__ import annotations

import random
from pathlib import Path

from . import GENERATORS, GUIDE, IMAGE_TASKS, BlindError, jsonl
from .refs import aligned
from .sources import VBENCH, lines_of


def arm_texts(run: Path, prompts: dict[str, dict]) -> list[tuple[str, str, str]]:
    """(prompt id, source, text) for every arm output."""
    files = sorted((run / "outputs").glob("*.jsonl"))
    if not files:
        raise BlindError(f"no outputs in {run / 'outputs'}: run 'enhance' first")
    found = []
    for path in files:
        for number, row in jsonl.rows(path):
            if row.get("id") not in prompts:
                raise BlindError(f"{path}:{number}: id {row.get('id')!r} is not in prompts.jsonl")
            found.append((row["id"], row.get("arm", path.stem), row["text"]))
    return found


def reference_texts(prompts: dict[str, dict], data: Path) -> list[tuple[str, str, str]]:
    """(prompt id, reference name, text) for the VBench prompts with aligned references."""
    vbench = [r for r in prompts.values() if r.get("source") == VBENCH]
    if not vbench:
        return []
    shorts, refs = lines_of(data / "prompts" / VBENCH), aligned(data)
    found = []
    for row in vbench:
        line = row["line"]
        if not (1 <= line <= len(shorts) and shorts[line - 1].strip() == row["prompt"]):
            raise BlindError(
                f"prompt {row['id']}: line {line} of {VBENCH} is not {row['prompt']!r}"
            )
        found += [(row["id"], name, text) for name, text in sorted(refs.get(line, {}).items())]
    return found


def pool(texts: list[tuple[str, str, str]], prompts: dict[str, dict]) -> list[dict]:
    """Items, one per distinct (prompt, text), each with all its sources; in a fixed order."""
    items: dict[tuple[str, str], dict] = {}
    for pid, source, text in texts:
        key = (pid, text.strip())
        item = items.setdefault(key, {"prompt_id": pid, "text": text.strip(), "sources": set()})
        item["sources"].add(source)
    for item in items.values():
        item["sources"] = sorted(item["sources"])
        item["task"] = prompts[item["prompt_id"]]["task"]
    return [items[k] for k in sorted(items)]


def opaque_ids(n: int, rng: random.Random) -> list[str]:
    """``n`` distinct random ids like ``x3f9a1c2e``."""
    ids: list[str] = []
    while len(ids) < n:
        candidate = f"x{rng.getrandbits(32):08x}"
        if candidate not in ids:
            ids.append(candidate)
    return ids


def shown(item: dict, prompt: dict) -> dict:
    """What a reader sees of an item."""
    row = {
        "id": item["id"],
        "task": item["task"],
        "generator": GENERATORS[item["task"]],
        "short": prompt["prompt"],
        "enhanced": item["text"],
    }
    if item["task"] in IMAGE_TASKS and prompt.get("image"):
        row["image"] = prompt["image"]
    return row


def guide_text(guide: Path, parts: int, readers: int) -> str:
    """The blind guide, and which files to read and write."""
    try:
        text = guide.read_text(encoding="utf-8").rstrip()
    except OSError:
        raise BlindError(f"cannot read the guide {guide} (give it with --guide)") from None
    return (
        f"{text}\n\n## This reading\n\nRead batches/part-K.jsonl (K = 1..{parts}; each line: id, "
        "task, generator, short, enhanced, image for image tasks) and write one label per item, "
        f"in the format above, to labels/part-K.<reader>.jsonl in the reading's folder ({readers} "
        "readers per part, each their own <reader> name, e.g. r1, r2).\n"
    )


def batches(
    run: Path,
    *,
    readers: int = 2,
    parts: int = 1,
    seed: int = 0,
    data: Path,
    guide: Path = GUIDE,
    force: bool = False,
) -> list[dict]:
    """Write the parts, GUIDE.md and key.jsonl; the key rows."""
    if parts < 1 or readers < 1:
        raise BlindError("--parts and --readers must be >= 1")
    labels = sorted((run / "labels").glob("*.jsonl")) if (run / "labels").is_dir() else []
    if labels and not force:
        raise BlindError(
            f"{run / 'labels'} has labels already; "
            "new batches would change every id (--force to redo)"
        )
    if not (run / "prompts.jsonl").exists():
        raise BlindError(f"no {run / 'prompts.jsonl'}: run 'draw' first")
    prompts = {r["id"]: r for r in jsonl.read(run / "prompts.jsonl")}
    items = pool(arm_texts(run, prompts) + reference_texts(prompts, data), prompts)
    rng = random.Random(seed)
    for item, opaque in zip(items, opaque_ids(len(items), rng)):
        item["id"] = opaque
    rng.shuffle(items)
    out = run / "batches"
    for old in out.glob("part-*.jsonl"):
        old.unlink()
    key = []
    for k in range(parts):
        chunk = items[k * len(items) // parts : (k + 1) * len(items) // parts]
        jsonl.write(out / f"part-{k + 1}.jsonl", [shown(i, prompts[i["prompt_id"]]) for i in chunk])
        key += [
            {
                "id": i["id"],
                "sources": i["sources"],
                "prompt_id": i["prompt_id"],
                "task": i["task"],
                "part": k + 1,
            }
            for i in chunk
        ]
    (out / "GUIDE.md").write_text(guide_text(guide, parts, readers), encoding="utf-8")
    jsonl.write(run / "key.jsonl", key)
    (run / "labels").mkdir(exist_ok=True)
    return key
