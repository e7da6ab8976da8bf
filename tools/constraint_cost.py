"""What the decoding constraint costs per generated token, side by side in one run.

    python tools/constraint_cost.py --prompts 8 --rounds 3 [--dtype float32] [--target video]

Each prompt is decoded greedily by the embedded backend with its request's constraint and
without it, alternating which goes first, ``--rounds`` times; reported: decode milliseconds
per token (prefill excluded) for both, and their ratio. The mask changes what is written, so
the two decodes may differ in length: per-token time is what is compared. Not a test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from promptx.backends.base import GenerationOptions  # noqa: E402
from promptx.backends.embedded import EmbeddedBackend  # noqa: E402
from promptx.enhancer import Enhancer, _messages  # noqa: E402


def per_token_ms(backend, messages, options) -> tuple[float, int]:
    output = backend.start(messages, options).finish()
    stats = output.engine_stats
    return 1000 * stats["decode_s"] / max(1, stats["new_tokens"]), stats["new_tokens"]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dtype", default=None)
    parser.add_argument("--target", default="video")
    parser.add_argument("--max-new-tokens", type=int, default=96)
    args = parser.parse_args(argv)
    lines = (ROOT / "examples" / "prompts.txt").read_text(encoding="utf-8").splitlines()
    prompts = [line.strip() for line in lines if line.strip()][: args.prompts]
    backend = EmbeddedBackend(dtype=args.dtype, quiet=True)
    enhancer = Enhancer(backend=backend)
    times = {"constrained": [], "free": []}
    tokens = {"constrained": 0, "free": 0}
    for round_ in range(args.rounds):
        for i, prompt in enumerate(prompts):
            request = enhancer._request(prompt, args.target, {"seed": 0, "temperature": 0.0})
            messages = _messages(request, backend)
            free = GenerationOptions(
                temperature=0.0, max_new_tokens=args.max_new_tokens, speculative=False
            )
            constrained = GenerationOptions(
                temperature=0.0,
                max_new_tokens=args.max_new_tokens,
                speculative=False,
                constraint=request.constraint,
            )
            order = [("constrained", constrained), ("free", free)]
            if (i + round_) % 2:
                order.reverse()
            for name, options in order:
                ms, n = per_token_ms(backend, messages, options)
                times[name].append(ms)
                tokens[name] += n
    free_ms, constrained_ms = (
        statistics.median(times["free"]),
        statistics.median(times["constrained"]),
    )
    print(
        f"decodes per side: {len(times['free'])} ({tokens['free']} / {tokens['constrained']} "
        f"tokens), dtype {args.dtype or 'auto'}"
    )
    print(
        f"median decode ms/token: free {free_ms:.2f}, constrained {constrained_ms:.2f}, "
        f"ratio {constrained_ms / free_ms:.4f} ({100 * (constrained_ms / free_ms - 1):+.2f}%)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
