"""Threads on one ``promptx.Enhancer``: requests per second at concurrency 1 and C, side by side.

    python tools/thread_bench.py --strength full --requests 32 --concurrency 1,8,1,8

Each level enhances the same prompts (cycling through examples/prompts.txt) with the same
seeds, from C threads sharing one Enhancer; a row reports requests/s, p50/p95 latency, the
speed-up over the first level, and whether every text equals the one-at-a-time text of its
prompt (nothing crossed, and batching changed no text). Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import promptx  # noqa: E402


def run_level(
    enhancer: promptx.Enhancer, work: list[str], concurrency: int, args
) -> tuple[dict, list[str]]:
    def one(prompt: str) -> tuple[float, str]:
        started = time.perf_counter()
        text = enhancer.enhance(prompt, args.target, seed=args.seed, strength=args.strength).text
        return time.perf_counter() - started, text

    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        rows = list(pool.map(one, work))
    wall = time.perf_counter() - started
    latencies = sorted(s for s, _ in rows)
    return (
        {
            "concurrency": concurrency,
            "requests": len(rows),
            "wall_s": round(wall, 2),
            "requests_per_s": round(len(rows) / wall, 3),
            "p50_s": round(statistics.median(latencies), 3),
            "p95_s": round(latencies[max(0, int(0.95 * len(latencies)) - 1)], 3),
        },
        [t for _, t in rows],
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strength", choices=("light", "medium", "full"), default="full")
    parser.add_argument("--target", default="video")
    parser.add_argument("--requests", type=int, default=32)
    parser.add_argument("--concurrency", default="1,8")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--prompts", type=Path, default=ROOT / "examples" / "prompts.txt")
    args = parser.parse_args(argv)
    prompts = [
        line.strip()
        for line in args.prompts.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    work = [prompts[i % len(prompts)] for i in range(args.requests)]
    enhancer = promptx.Enhancer(quiet=True)
    enhancer.enhance(
        prompts[0], args.target, seed=args.seed, strength=args.strength
    )  # loads what it needs
    first_texts, first_rate = None, None
    print(
        "| concurrency | requests | wall s | req/s | p50 s | p95 s | vs first | texts as at c=1 |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for level in (int(c) for c in args.concurrency.split(",")):
        row, texts = run_level(enhancer, work, level, args)
        first_texts = first_texts or texts
        first_rate = first_rate or row["requests_per_s"]
        same = sum(a == b for a, b in zip(texts, first_texts))
        print(
            f"| {level} | {row['requests']} | {row['wall_s']} | {row['requests_per_s']} | "
            f"{row['p50_s']} | {row['p95_s']} | {row['requests_per_s'] / first_rate:.2f}x | "
            f"{same}/{len(texts)} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
