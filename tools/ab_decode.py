"""Decode timings and outputs of one checkout, for before/after comparisons of the engine.

    git worktree add /tmp/base <commit>
    for i in 1 2 3; do
        python tools/ab_decode.py /tmp/base /tmp/ab/base_$i.json
        python tools/ab_decode.py . /tmp/ab/new_$i.json
    done
    python tools/ab_decode.py --compare /tmp/ab

Each run loads the embedded model from CHECKOUT (its ``engine`` and ``promptx`` first on the
path) and decodes four fixed prompts 64 tokens each, greedy: one at a time plainly, one at a
time speculatively (the shipped drafter and the harness, as ``enhance`` does), and the four as
one plain batch. It writes the seconds and the tokens. ``--compare`` prints each kind's median
time ratio (new / base) and whether every run of both checkouts gave the same tokens.
Alternate the checkouts, as above: the project machines drift by 10-20% within minutes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

PROMPTS = (
    "a cat on a skateboard",
    "a knight fighting a dragon",
    "a lighthouse at night in a storm",
    "a fox in the snow",
)
KINDS = ("plain", "speculative", "batch")


def run(checkout: Path, out: Path, threads: int) -> None:
    sys.path.insert(0, str(checkout.resolve()))
    import torch

    import engine
    from engine.decode.sampling import SamplingParams
    from promptx.backends.embedded import EmbeddedBackend

    if not engine.__file__.startswith(str(checkout.resolve())):
        sys.exit(f"imported {engine.__file__}, not the checkout's engine")
    torch.set_num_threads(threads)
    generator = EmbeddedBackend(quiet=True).generator
    ids = [
        generator.tokenizer.encode_chat(
            [{"role": "user", "content": f"Describe a video of {p} in detail."}]
        )
        for p in PROMPTS
    ]
    params = SamplingParams(max_new_tokens=64)
    seconds: dict[str, float] = {}
    tokens: dict[str, object] = {}
    for kind in KINDS[:2]:
        started = time.perf_counter()
        tokens[kind] = [generator.generate(x, params, speculative=kind != "plain") for x in ids]
        seconds[kind] = time.perf_counter() - started
    started = time.perf_counter()
    tokens["batch"] = generator.generate_many(ids, [params] * len(ids), speculative=False)
    seconds["batch"] = time.perf_counter() - started
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"seconds": seconds, "tokens": tokens}))
    print(checkout, {k: round(v, 3) for k, v in seconds.items()})


def compare(folder: Path) -> None:
    runs = {
        side: [json.loads(p.read_text()) for p in sorted(folder.glob(f"{side}_*.json"))]
        for side in ("base", "new")
    }
    if not runs["base"] or not runs["new"]:
        sys.exit(f"{folder} needs base_*.json and new_*.json")
    for kind in KINDS:
        base = [r["seconds"][kind] for r in runs["base"]]
        new = [r["seconds"][kind] for r in runs["new"]]
        ratio = statistics.median(new) / statistics.median(base)
        print(f"{kind}: base {base} new {new}; median new/base {ratio:.3f}")
    every = runs["base"] + runs["new"]
    print("same tokens in every run:", all(r["tokens"] == every[0]["tokens"] for r in every))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path, help="a checkout, or with --compare the folder")
    parser.add_argument("out", type=Path, nargs="?", help="where the run's JSON goes")
    parser.add_argument("--compare", action="store_true")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    if args.compare:
        compare(args.checkout)
    elif args.out is None:
        parser.error("give OUT, the JSON file the run writes")
    else:
        run(args.checkout, args.out, args.threads)


if __name__ == "__main__":
    main()
