"""Measure what the decoding constraint costs per generated token (a benchmark, not a test).

Decodes the first N prompts of a prompt file with the embedded backend at default
settings, each prompt twice in alternating order (with the constraint, without it), and
prints the median per-token time of each and their ratio, plus the one-off cost of
building a request's banned ids. Greedy, so that both runs are deterministic.

    python tools/measure_constraint_cost.py ../shared/data/prompts/vbench_all_dimension.txt -n 12
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from promptx import Enhancer  # noqa: E402
from promptx.backends.base import GenerationOptions  # noqa: E402
from promptx.enhancer import _messages  # noqa: E402
from promptx.quality.constraint import DecodingConstraint  # noqa: E402
from promptx.request import EnhanceRequest  # noqa: E402


def per_token_seconds(backend, messages, options) -> float:
    run = backend.start(messages, options)
    output = run.finish()
    return output.latency_s / max(1, output.completion_tokens)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("prompt_file", type=Path)
    parser.add_argument("-n", type=int, default=12)
    parser.add_argument("--target", default="video")
    parser.add_argument("--max-new-tokens", type=int, default=96)
    args = parser.parse_args()
    enhancer = Enhancer(quiet=True)
    backend, profile = enhancer.backend, enhancer.profile(args.target)
    prompts = [line.strip() for line in args.prompt_file.read_text().splitlines() if line.strip()][:args.n]
    with_mask, without, build = [], [], []
    for i, prompt in enumerate(prompts):
        request = EnhanceRequest.build(profile, prompt)
        messages = _messages(request)
        started = time.perf_counter()
        constraint = DecodingConstraint.for_prompt(prompt)
        backend._vocabulary().banned_ids(constraint)
        build.append(time.perf_counter() - started)
        plain = GenerationOptions(temperature=0.0, max_new_tokens=args.max_new_tokens, seed=0)
        masked = GenerationOptions(temperature=0.0, max_new_tokens=args.max_new_tokens, seed=0,
                                   constraint=constraint)
        order = [(masked, with_mask), (plain, without)]
        for options, bucket in (order if i % 2 == 0 else order[::-1]):
            bucket.append(per_token_seconds(backend, messages, options))
    a, b = statistics.median(with_mask), statistics.median(without)
    print(f"backend: {backend.name} {backend.model_name}, {len(prompts)} prompts, greedy, "
          f"max_new_tokens {args.max_new_tokens}")
    print(f"median ms/token with constraint {a * 1000:.2f}, without {b * 1000:.2f}, ratio {a / b:.3f}")
    print(f"banned ids per new constraint: median {statistics.median(build) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
