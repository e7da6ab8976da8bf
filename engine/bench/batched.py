"""``promptx bench --concurrency C``: decode the prompts C at a time in one batch per run.

Every run decodes each group of C prompts with ``engine.speculative.batch``:
``none`` is batched plain decoding (no drafter), ``chain@B``/``tree@B`` a fixed
tree per row, ``harness`` the harness's per-round chain choice for the batch.
A group's wall time is split evenly over its prompts, so summed latencies
equal the wall time and tokens/s is the batch throughput. Peers (transformers,
llama.cpp) still decode one prompt at a time. Not here: the report
(``engine.bench.report``).
"""

from __future__ import annotations

import time
from typing import Callable, Sequence

from ..decode.stats import DecodeStats
from ..speculative.batch import decode_speculative_batch
from ..speculative.loop import FixedTree, TreeConfig
from .runs import BenchError, Sample, rotated

PLAIN = TreeConfig.chain(0)


def decode_group(generator, drafter, run, prompt_ids: Sequence[Sequence[int]], params) -> list:
    """One batched decode of ``prompt_ids`` with ``run``; one ``Sample`` per prompt."""
    if run.mode != "none" and drafter is None:
        raise BenchError(f"run {run.name} needs a drafter")
    planner = (
        run.planner
        if run.mode == "harness"
        else FixedTree(PLAIN if run.mode == "none" else run.tree)
    )
    stats = [DecodeStats() for _ in prompt_ids]
    stops = [generator.stop_checker(params) for _ in prompt_ids]
    tokens: list[list[int]] = [[] for _ in prompt_ids]
    started = time.perf_counter()
    for index, chunk in decode_speculative_batch(
        generator.model,
        None if run.mode == "none" else drafter,
        [list(p) for p in prompt_ids],
        [params] * len(prompt_ids),
        stops,
        stats,
        planner,
    ):
        tokens[index].extend(chunk)
    share = (time.perf_counter() - started) / len(prompt_ids)
    for s in stats:  # each row reports the whole batch's prefill: share it out like the latency
        s.prefill_s /= len(prompt_ids)
    return [Sample(t, share, s) for t, s in zip(tokens, stats)]


def measure_batched(
    generator, drafter, runs, peers, prompts, params, concurrency: int, say: Callable[[str], None]
) -> dict:
    """Like ``engine.bench.measure`` with groups of ``concurrency`` prompts per batched decode."""
    samples: dict[str, list] = {job.name: [] for job in [*runs, *peers]}
    groups = [prompts[i : i + concurrency] for i in range(0, len(prompts), concurrency)]
    for g, group in enumerate(groups):
        for run in rotated(list(runs), g):
            say(f"group {g + 1}/{len(groups)} ({len(group)} prompts): {run.name}")
            with generator.lock:
                samples[run.name] += decode_group(
                    generator, drafter, run, [p.ids for p in group], params
                )
        for peer in peers:
            for prompt in group:
                if (
                    sample := peer.decode(prompt.ids, params)
                ) is not None:  # None: crashed (reported)
                    samples[peer.name].append(sample)
    return samples
