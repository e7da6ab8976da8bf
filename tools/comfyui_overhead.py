"""What the ComfyUI "promptx Enhance Prompt" node costs over ``Enhancer.enhance`` itself.

    python tools/comfyui_overhead.py [--prompts 20] [--rounds 5] [--target wan-t2v]

Light strength (no model), the same prompts and seeds, through the same held Enhancer: the
node adds the target lookup, the report and the error wrapping. Alternates which goes first,
``--rounds`` times, and prints milliseconds per call for both, their difference and ratio.
Not a test: a timing on a shared machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from promptx.comfyui import NODE_CLASS_MAPPINGS  # noqa: E402
from promptx.comfyui.held_enhancer import held_enhancer  # noqa: E402

PROMPTS = [
    "a knight fighting a dragon",
    "a red car on a wet street at night",
    "a bowl of ramen on a wooden table",
    "a fox running through fresh snow",
    "two children flying a kite on a beach",
    "a lighthouse on a cliff during a storm",
    "an old man reading in a library",
    "a cat on a skateboard",
    "a hot air balloon over a desert",
    "a chef tossing noodles in a wok",
]


def per_call_ms(call, prompts: list[str]) -> float:
    start = time.perf_counter()
    for seed, prompt in enumerate(prompts):
        call(prompt, seed)
    return 1000 * (time.perf_counter() - start) / len(prompts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--target", default="wan-t2v")
    args = parser.parse_args()
    prompts = [PROMPTS[i % len(PROMPTS)] for i in range(args.prompts)]
    enhancer = held_enhancer().enhancer  # the one the node uses without an enhancer input
    node = NODE_CLASS_MAPPINGS["PromptxEnhancePrompt"]()

    def direct(prompt, seed):
        return enhancer.enhance(prompt, args.target, strength="light", seed=seed)

    def through_node(prompt, seed):
        return node.enhance(prompt, args.target, "light", seed)

    assert direct(prompts[0], 0).text == through_node(prompts[0], 0)[0]  # the same work, warmed up
    times = {"enhance": [], "node": []}
    for round_ in range(args.rounds):
        order = [("enhance", direct), ("node", through_node)]
        for name, call in order if round_ % 2 == 0 else order[::-1]:
            times[name].append(per_call_ms(call, prompts))
    direct_ms, node_ms = statistics.median(times["enhance"]), statistics.median(times["node"])
    print(
        f"{args.target}, light, {args.prompts} prompts x {args.rounds} rounds (median ms per call)"
    )
    print(
        f"Enhancer.enhance: {direct_ms:.2f} ms   node: {node_ms:.2f} ms   "
        f"overhead: {node_ms - direct_ms:+.2f} ms   ratio node/enhance: {node_ms / direct_ms:.3f}"
    )


if __name__ == "__main__":
    main()
