"""Score a blind reading: flaw rates, quality and problems per source and task, and agreement.

An item counts when at least two readers labelled it (the others are listed). Per (task, source),
a deduplicated item counting for each of its sources:

- flawed (any): the share of items that at least one reader marked unfaithful;
- flawed (majority): the share that more than half of its readers marked unfaithful (with two
  readers: both);
- quality: the mean of every reader's quality over the items;
- per problem kind: the number of items for which at least one reader named it.

Agreement over all counted items: the share where all readers agree on faithful; Cohen's kappa
on faithful for each pair of readers that share items, averaged over the pairs; the mean absolute
quality difference over every pair of readers on an item. Written to RUN_DIR/score.md.
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path
from statistics import mean

from . import TASKS, BlindError, jsonl
from .labels import PROBLEMS, Label, read_labels


def kappa(pairs: list[tuple[bool, bool]]) -> float | None:
    """Cohen's kappa of two readers' faithful labels on shared items (None when undefined)."""
    if not pairs:
        return None
    observed = mean(a == b for a, b in pairs)
    pa, pb = mean(a for a, _ in pairs), mean(b for _, b in pairs)
    expected = pa * pb + (1 - pa) * (1 - pb)
    return None if expected == 1 else (observed - expected) / (1 - expected)


def group_stats(items: list[list[Label]]) -> dict:
    """n, flaw rates, mean quality and problem counts of some labelled items."""
    n = len(items)
    flawed_any = sum(any(not lb.faithful for lb in labels) for labels in items)
    flawed_majority = sum(
        sum(not lb.faithful for lb in labels) * 2 > len(labels) for labels in items
    )
    return {
        "n": n,
        "flawed_any_pct": round(100 * flawed_any / n, 1),
        "flawed_majority_pct": round(100 * flawed_majority / n, 1),
        "quality": round(float(mean(lb.quality for labels in items for lb in labels)), 2),
        "problems": {
            p: sum(any(p in lb.problems for lb in labels) for labels in items) for p in PROBLEMS
        },
    }


def agreement(items: list[list[Label]]) -> dict:
    """Agreement of readers over the counted items."""
    by_pair: dict[tuple[str, str], list[tuple[bool, bool]]] = {}
    differences = []
    for labels in items:
        for a, b in combinations(sorted(labels, key=lambda lb: lb.reader), 2):
            by_pair.setdefault((a.reader, b.reader), []).append((a.faithful, b.faithful))
            differences.append(abs(a.quality - b.quality))
    kappas = [k for k in (kappa(p) for p in by_pair.values()) if k is not None]
    return {
        "items": len(items),
        "faithful_agree_pct": round(
            100 * mean(len({lb.faithful for lb in labels}) == 1 for labels in items), 1
        )
        if items
        else None,
        "kappa": round(mean(kappas), 3) if kappas else None,
        "reader_pairs": len(by_pair),
        "quality_abs_diff": round(mean(differences), 2) if differences else None,
    }


def score(run: Path) -> dict:
    """Read the key and the labels; the scores."""
    if not (run / "key.jsonl").exists():
        raise BlindError(f"no {run / 'key.jsonl'}: run 'batches' first")
    key = {row["id"]: row for row in jsonl.read(run / "key.jsonl")}
    labels, warnings = read_labels(run / "labels", set(key))
    counted = {i: labels[i] for i in key if len(labels.get(i, [])) >= 2}
    groups: dict[tuple[str, str], list[list[Label]]] = {}
    for item_id, item_labels in counted.items():
        for source in key[item_id]["sources"]:
            groups.setdefault((key[item_id]["task"], source), []).append(item_labels)
    order = sorted(groups, key=lambda g: (TASKS.index(g[0]) if g[0] in TASKS else len(TASKS), g))
    return {
        "groups": [{"task": t, "source": s, **group_stats(groups[(t, s)])} for t, s in order],
        "agreement": agreement(list(counted.values())),
        "readers": sorted({lb.reader for ls in labels.values() for lb in ls}),
        "incomplete": sorted((i, len(labels.get(i, []))) for i in key if i not in counted),
        "warnings": warnings,
    }


def fmt(value) -> str:
    """A table cell."""
    return "n/a" if value is None else str(value)


def markdown(result: dict, run: Path) -> str:
    """The scores as markdown."""
    head = ["task", "source", "n", "flawed (any) %", "flawed (majority) %", "quality", *PROBLEMS]
    lines = [
        f"# Blind reading: {run.name}",
        "",
        f"Readers: {', '.join(result['readers'])}. Items counted (>= 2 readers): "
        f"{result['agreement']['items']}.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for g in result["groups"]:
        cells = [
            g["task"],
            g["source"],
            g["n"],
            f"{g['flawed_any_pct']:.1f}",
            f"{g['flawed_majority_pct']:.1f}",
            f"{g['quality']:.2f}",
            *(g["problems"][p] for p in PROBLEMS),
        ]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    a = result["agreement"]
    lines += [
        "",
        f"Agreement on faithful: {fmt(a['faithful_agree_pct'])}% of items; Cohen's kappa "
        f"{fmt(a['kappa'])} (mean over {a['reader_pairs']} reader pair(s)); "
        f"mean |quality difference| {fmt(a['quality_abs_diff'])}.",
    ]
    if result["incomplete"]:
        lines += [
            "",
            f"Not counted (fewer than 2 readers): {len(result['incomplete'])} item(s): "
            + ", ".join(f"{i} ({n})" for i, n in result["incomplete"]),
        ]
    if result["warnings"]:
        lines += [
            "",
            f"Label warnings ({len(result['warnings'])}): " + "; ".join(result["warnings"]),
        ]
    return "\n".join(lines) + "\n"
