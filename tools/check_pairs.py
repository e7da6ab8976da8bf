"""Check tuning pairs (data/tuning/{train,heldout}/*.jsonl): schema, budget, faithfulness.

Every pair must name a known target profile, fit that profile's word and
encoder-token budget, carry an image caption where the task takes an image,
pass ``promptx.quality.assess``, and keep out of the evaluation prompts
(the benchmark lines of the faithfulness report). No input may sit in both
splits, and ids are unique. Exits 1 and lists each problem as ``file:line:
why``; ``--summary`` prints the counts per split, task and target.

    python tools/check_pairs.py data/tuning            # every file
    python tools/check_pairs.py data/tuning/train/video-a.jsonl --summary

Not here: training (issue 13's ``promptx tune``).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from promptx.profiles.registry import default_registry  # noqa: E402
from promptx.quality import assess  # noqa: E402
from promptx.text.cleanup import estimate_encoder_tokens  # noqa: E402
from promptx.tuning_pairs import TuningPair, read_pairs  # noqa: E402

SHARED = ROOT.parent / "shared" / "data" / "prompts"
# the evaluation prompts (docs/quality.md, data/eval): never a training input
BENCHMARK = (
    ("vbench_all_dimension.txt", 200),
    ("geneval_prompts.txt", 553),
    ("partiprompts.tsv", 100),
)


def _normal(text: str) -> str:
    return " ".join(text.lower().replace(",", " ").split()).strip(" .")


def benchmark_inputs() -> set[str]:
    seen: set[str] = set()
    for name, n in BENCHMARK:
        path = SHARED / name
        if path.exists():
            lines = path.read_text(encoding="utf-8").splitlines()
            first = 1 if name.endswith(".tsv") else 0
            seen |= {
                _normal(line.split("\t")[0]) for line in lines[first : first + n] if line.strip()
            }
    i2v = SHARED / "vbench_i2v_full_info.json"
    if i2v.exists():
        seen |= {_normal(e["prompt_en"]) for e in json.loads(i2v.read_text())[:100]}
    for file in sorted((ROOT / "data" / "eval").glob("*.jsonl")):  # parti_50 and the i2i edits
        seen |= {
            _normal(json.loads(line)["prompt"])
            for line in file.read_text(encoding="utf-8").splitlines()
            if line.strip()
        }
    return seen


def problems_of(pair: TuningPair, registry) -> list[str]:
    try:
        profile = registry.get(pair.target)
    except Exception as exc:  # TemplateError: unknown target
        return [str(exc)]
    out = []
    if profile.name != pair.target:
        out.append(f"target {pair.target!r} is an alias; write {profile.name!r}")
    if profile.wants_image != (pair.image is not None):
        out.append(
            "image caption "
            + ("missing" if profile.wants_image else "given for a task without image")
        )
    if pair.style is not None and pair.style not in profile.styles:
        out.append(f"style {pair.style!r} is not one of {sorted(profile.styles)}")
    budget = profile.length  # the word budget is the assessment's
    if budget.max_encoder_tokens:
        tokens = estimate_encoder_tokens(pair.output, budget.encoder)
        if tokens > budget.max_encoder_tokens:
            out.append(f"~{tokens} {budget.encoder} tokens, over {budget.max_encoder_tokens}")
    verdict = assess(pair.input, pair.output, profile, context=pair.image)
    out += [f"assessment: {r}" for r in verdict.reasons()]
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--summary", action="store_true")
    args = parser.parse_args(argv)
    rows, problems = read_pairs(args.paths, strict=False)
    registry, bench = default_registry(), benchmark_inputs()
    ids, splits = {}, collections.defaultdict(dict)
    counts = collections.Counter()
    for row in rows:
        pair, where, split = row.pair, row.where, row.split
        found = problems_of(pair, registry)
        if pair.id in ids:
            found.append(f"id {pair.id!r} also at {ids[pair.id]}")
        ids[pair.id] = where
        key = _normal(pair.input)
        if key in bench:
            found.append("input is an evaluation prompt")
        other = [s for s in splits if s != split and key in splits[s]]
        if other:
            found.append(f"input also in split {other[0]} at {splits[other[0]][key]}")
        splits[split].setdefault(key, where)
        problems += [f"{where}: {pair.id}: {p}" for p in found]
        task = registry.get(pair.target).task if not found or "target" not in found[0] else "?"
        counts[(split, task, pair.target)] += 1
    for p in problems:
        print(p)
    if args.summary:
        for (split, task, target), c in sorted(counts.items()):
            print(f"{split}\t{task}\t{target}\t{c}")
        print(f"total\t{sum(counts.values())}\tproblems\t{len(problems)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
