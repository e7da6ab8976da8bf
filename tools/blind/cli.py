"""The command line: ``python -m tools.blind draw | enhance | batches | score | refs``.

User errors (``BlindError``) print as one line per message line, ``blind: ...``, and exit with
status 2; argparse's own errors do the same.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import DEFAULT_DATA, DEFAULT_REGISTRY, GUIDE, TASKS, BlindError


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command."""
    parser = argparse.ArgumentParser(
        prog="python -m tools.blind", description="Blind reading of enhanced prompts."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    draw = commands.add_parser("draw", help="draw fresh prompts into RUN_DIR/prompts.jsonl")
    draw.add_argument("--out", type=Path, required=True, help="the reading's folder (RUN_DIR)")
    draw.add_argument("--seed", type=int, default=0)
    for task in TASKS:
        draw.add_argument(
            f"--n-{task}", type=int, default=0, metavar="N", help=f"{task} prompts to draw"
        )
    draw.add_argument(
        "--prompts",
        type=Path,
        help="a JSON Lines file of prompts (prompt, task[, image]) to use "
        "instead of drawing; refused if any is used",
    )
    draw.add_argument(
        "--min-vbench",
        type=float,
        default=0.5,
        help="least share of t2v prompts from vbench_all_dimension.txt (with references)",
    )
    draw.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder")
    draw.add_argument(
        "--registry", type=Path, default=DEFAULT_REGISTRY, help="the registry of drawn prompts"
    )

    enhance = commands.add_parser("enhance", help="enhance the prompts with each arm")
    enhance.add_argument("run", type=Path)
    enhance.add_argument("--arm", action="append", required=True, metavar="NAME[:key=value,...]")
    for task in TASKS:
        enhance.add_argument(
            f"--target-{task}", metavar="TARGET", help=f"target for {task} prompts"
        )

    batches = commands.add_parser("batches", help="pool, blind and split the texts for readers")
    batches.add_argument("run", type=Path)
    batches.add_argument("--readers", type=int, default=2)
    batches.add_argument("--parts", type=int, default=1)
    batches.add_argument("--seed", type=int, default=0)
    batches.add_argument("--data", type=Path, default=DEFAULT_DATA)
    batches.add_argument("--guide", type=Path, default=GUIDE)
    batches.add_argument("--force", action="store_true", help="redo batches although labels exist")

    score = commands.add_parser("score", help="score the readers' labels")
    score.add_argument("run", type=Path)
    score.add_argument("--json", action="store_true", help="print JSON instead of the table")

    refs = commands.add_parser(
        "refs", help="how the reference files align with vbench_all_dimension.txt"
    )
    refs.add_argument("--data", type=Path, default=DEFAULT_DATA)
    return parser


def run_draw(args) -> None:
    from .draw import draw

    counts = {t: getattr(args, f"n_{t}") for t in TASKS}
    if any(n < 0 for n in counts.values()):
        raise BlindError("counts must be >= 0")
    if args.prompts is None and not any(counts.values()):
        raise BlindError("give --n-t2v/--n-t2i/--n-i2v/--n-i2i or --prompts")
    rows = draw(
        args.out,
        counts,
        seed=args.seed,
        data=args.data,
        registry=args.registry,
        prompts=args.prompts,
        min_vbench=args.min_vbench,
    )
    by = {}
    for r in rows:
        by.setdefault((r["task"], r["source"]), 0)
        by[(r["task"], r["source"])] += 1
    for (task, source), n in by.items():
        print(f"{task}\t{source}\t{n}")
    print(f"wrote {len(rows)} prompts to {args.out / 'prompts.jsonl'}; recorded in {args.registry}")


def run_enhance(args) -> None:
    from .arms import parse_all
    from .enhance import enhance

    targets = {t: getattr(args, f"target_{t}") for t in TASKS if getattr(args, f"target_{t}")}
    for arm, s in enhance(args.run, parse_all(args.arm), targets).items():
        print(
            f"{arm}: {s['n']} outputs, median latency {s['median_latency_s']} s, "
            f"fallbacks {s['fallbacks']}"
        )


def run_batches(args) -> None:
    from .batches import batches

    key = batches(
        args.run,
        readers=args.readers,
        parts=args.parts,
        seed=args.seed,
        data=args.data,
        guide=args.guide,
        force=args.force,
    )
    print(
        f"wrote {len(key)} items in {args.parts} part(s) to {args.run / 'batches'}; "
        f"key in {args.run / 'key.jsonl'}"
    )


def run_score(args) -> None:
    from .score import markdown, score

    result = score(args.run)
    table = markdown(result, args.run)
    (args.run / "score.md").write_text(table, encoding="utf-8")
    print(json.dumps(result, indent=1) if args.json else table, end="" if not args.json else "\n")


def run_refs(args) -> None:
    from .refs import report

    print(json.dumps(report(args.data), indent=1))


COMMANDS = {
    "draw": run_draw,
    "enhance": run_enhance,
    "batches": run_batches,
    "score": run_score,
    "refs": run_refs,
}


def main(argv: list[str] | None = None) -> int:
    """Run one command; 0 on success, 2 on a user error."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        COMMANDS[args.command](args)
    except BlindError as exc:
        for line in str(exc).splitlines():
            print(f"blind: {line}", file=sys.stderr)
        return 2
    return 0
