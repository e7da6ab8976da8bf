"""The reference decoder: plain autoregressive decoding with the KV cache, the oracle.

Greedy or sampled (temperature / top-p / top-k / repetition penalty, seeded),
stopping on EOS, stop strings or the token budget. Yields tokens as produced.
The decoder that serves requests (``engine.speculative.loop.decode_speculative``,
plain steps when there is no drafter) must reproduce its greedy output token for
token; the tests, the benchmark's plain baseline and the drafter's reference data
run this one. Also ``prefill``, which every decoder's first pass uses.
"""

from __future__ import annotations

import time
from typing import Iterator, Sequence

import torch

from ..runtime.model import Transformer
from .commit import commit_tokens
from .sampling import SamplingParams, make_generator, pick_token
from .stats import DecodeStats
from .stopping import StopChecker


def prefill(model: Transformer, prompt_ids: Sequence[int], cache, *, taps: bool = False):
    """Run the prompt, commit it to the cache and return the output at its last row."""
    tokens = torch.tensor([list(prompt_ids)], device=cache.k.device)
    out = model(tokens, cache, logits_at=slice(-1, None), taps=taps)
    cache.commit(len(prompt_ids))
    return out


def decode_autoregressive(
    model: Transformer,
    prompt_ids: Sequence[int],
    params: SamplingParams,
    stop: StopChecker,
    stats: DecodeStats | None = None,
) -> Iterator[int]:
    """Yield generated tokens."""
    stats = stats if stats is not None else DecodeStats()
    stats.prompt_tokens = len(prompt_ids)
    if stop.done:
        return
    cache = model.new_cache(len(prompt_ids) + params.max_new_tokens + 1)
    generator = make_generator(params.seed)
    started = time.perf_counter()
    logits = prefill(model, prompt_ids, cache).logits[0, -1]
    stats.prefill_s = time.perf_counter() - started
    started = time.perf_counter()
    while True:
        token = pick_token(logits, stop.tokens, params, generator)
        yield from commit_tokens([token], stop, stats)
        if stop.done:
            break
        logits = model(torch.tensor([[token]], device=cache.k.device), cache).logits[0, -1]
        cache.commit(1)
        stats.target_forwards += 1
    stats.decode_s = time.perf_counter() - started
