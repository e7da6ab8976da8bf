"""Copy drafts side by side: plain decoding, the harness, the harness with copy drafts (greedy), or
plain against table-priced copy drafts (``--temperature`` > 0), on enhance-400 prompts rendered
as ``promptx enhance --strength full`` renders them, interleaved prompt by prompt in one process.

    python tools/copy_draft_bench.py --start 0 --count 16               # greedy, 128 new tokens
    python tools/copy_draft_bench.py --start 16 --count 16 --temperature 0.7

Prints tokens/s (prefill included), the ratio to plain decoding, tokens per target pass, and
(greedy) how many outputs equal plain decoding's token for token.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def rendered_prompts(backend, start: int, count: int) -> list[list[int]]:
    from promptx import Enhancer
    from promptx.enhancer import _messages

    enhancer = Enhancer(strength="full")
    lines = (
        (ROOT / "promptx" / "suites" / "enhance-400.jsonl").read_text(encoding="utf-8").splitlines()
    )
    rows = [json.loads(line) for line in lines[start : start + count]]
    return [
        backend.encode(
            _messages(
                enhancer._request(r["prompt"], r["task"], {"caption": r.get("caption")}), backend
            )
        )
        for r in rows
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--count", type=int, default=16)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    args = parser.parse_args()

    from engine import DecodeStats, SamplingParams
    from promptx.backends.embedded import EmbeddedBackend

    backend = EmbeddedBackend(quiet=True)
    generator = backend.generator
    harness, copies = generator.planner, getattr(generator.planner, "copies", None)
    if copies is None:
        sys.exit(
            "no copy table is attached (no shipped drafter for this model, "
            "or PROMPTX_COPY_DRAFTS=0)"
        )
    sampled = args.temperature > 0
    modes = ["plain", "no copies", "copies"]
    totals = {m: [0, 0.0, 0] for m in modes}
    outputs: dict[str, list] = {m: [] for m in modes}
    for i, ids in enumerate(rendered_prompts(backend, args.start, args.count)):
        for k in range(len(modes)):
            mode = modes[(i + k) % len(modes)]  # rotate the order: spread machine noise
            harness.copies = copies if mode == "copies" else None
            harness.config = dataclasses.replace(harness.config, copy_sampling=mode == "copies")
            params = SamplingParams(
                temperature=args.temperature,
                top_p=0.95 if sampled else 1.0,
                max_new_tokens=args.max_new_tokens,
                seed=i,
            )
            stats = DecodeStats()
            started = time.perf_counter()
            out = generator.generate(ids, params, speculative=mode != "plain", stats=stats)
            seconds = time.perf_counter() - started
            totals[mode][0] += len(out)
            totals[mode][1] += seconds
            totals[mode][2] += stats.target_forwards + 1
            outputs[mode].append(out)
    harness.copies = copies
    base = totals["plain"][0] / totals["plain"][1]
    for mode in modes:
        tokens, seconds, passes = totals[mode]
        name = mode if mode == "plain" else f"{'sampling' if sampled else 'harness'} {mode}"
        print(
            f"{name:22s} {tokens / seconds:6.1f} tok/s  {tokens / seconds / base:.2f}x  "
            f"tokens/pass {tokens / passes:.2f}  tokens {tokens}"
        )
    if not sampled:
        equal = {m: sum(a == b for a, b in zip(outputs["plain"], outputs[m])) for m in modes}
        print(f"equal to plain decoding: {equal} of {args.count}")


if __name__ == "__main__":
    main()
