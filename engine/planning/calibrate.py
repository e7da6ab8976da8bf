"""Measure a ``CostTable`` on the current device: target verification and drafter step latencies.

Each grid point is timed ``repeats`` times after one warm-up and the fastest is
kept: another job on the machine only ever adds time, and with the quick grid's
two repeats a median is their mean (a table measured while a compiler ran kept
2.04 s for a 4-token pass that takes ~0.05 s). The target is timed as in a
verification pass (tree mask, taps, logits at every new token) over a cache
already holding ``context`` entries; the drafter as one tree-growth step of
``width`` frontier nodes plus its top-k head.

``QUICK_GRID`` is the small grid used automatically when no table exists (seconds
on a CPU); ``FULL_GRID`` is what ``promptx calibrate`` measures by default.
Not here: the table format (``engine.planning.cost_table``), its use (``engine.planning.harness``).
"""

from __future__ import annotations

import hashlib
import time
from typing import Callable, Sequence

import torch

from ..progress import progress_bar
from ..runtime.cuda_graphs import cuda_graphs_of
from ..speculative.checkpoint import target_fingerprint
from .cost_table import CostKey, CostTable, cpu_name

# both sides of 4 and 8 rows: CPU int4/int8 kernels work in blocks of 4 rows, so a pass of 5 rows
# costs one block more than 4 (int4 here: 18.0 / 24.6 / 31.4 ms for 1 / 4 / 5; 1..4 is about
# linear). QUICK_GRID runs at the first speculative decode on a machine: ~1.6x the points of
# (1, 8, 32)
FULL_GRID = dict(
    tokens=(1, 2, 3, 4, 5, 8, 9, 16, 17, 32, 64),
    contexts=(128, 512, 1024, 2048, 4096),
    batches=(1, 2, 4, 8),
    widths=(1, 2, 4, 8, 16, 32, 64),
    repeats=3,
)
QUICK_GRID = dict(
    tokens=(1, 4, 5, 8, 9, 32), contexts=(256, 1024), batches=(1, 8), widths=(1, 4, 16), repeats=2
)
DRAFT_CONTEXT = 512
BRANCHING = 8


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return f"cuda:{torch.cuda.get_device_name(device)}"
    return f"{device.type}:{cpu_name()}"


def cost_key(model, drafter) -> CostKey:
    """Device (and whether the target replays CUDA graphs: its passes then cost less), target
    fingerprint + drafter shape, dtype and torch threads of this pair."""
    c = drafter.config
    shape = f"{c.hidden_size}-{c.draft_vocab_size}-{c.lowrank_rank}-{c.window}"
    drafter_id = hashlib.sha256(shape.encode()).hexdigest()[:6]
    weight = model.embed_tokens.weight
    device = device_name(weight.device) + (
        "+cuda-graphs" if cuda_graphs_of(model) is not None else ""
    )
    return CostKey(
        device=device,
        model=f"{target_fingerprint(model)}-{drafter_id}",
        dtype=model.precision,
        threads=torch.get_num_threads(),
    )


def fastest_seconds(run: Callable[[], object], repeats: int) -> float:
    """Fastest wall time of ``run`` over ``repeats`` calls after one warm-up call."""
    run()
    _sync()
    times = []
    for _ in range(max(1, repeats)):
        started = time.perf_counter()
        run()
        _sync()
        times.append(time.perf_counter() - started)
    return min(times)


def _sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


@torch.inference_mode()
def verify_latency(model, tokens: int, context: int, batch: int, repeats: int) -> float:
    """One target pass over ``tokens`` tree tokens per sequence after ``context`` cached ones."""
    device = model.embed_tokens.weight.device
    cache = model.new_cache(context + tokens, batch=batch)
    cache.commit(context)
    ids = torch.randint(0, model.config.vocab_size, (batch, tokens), device=device)
    positions = torch.arange(context, context + tokens, device=device)
    mask = torch.ones(tokens, context + tokens, dtype=torch.bool, device=device)
    mask[:, context:] = torch.ones(tokens, tokens, dtype=torch.bool, device=device).tril()
    return fastest_seconds(
        lambda: model(ids, cache, positions=positions, mask=mask, taps=True), repeats
    )


@torch.inference_mode()
def draft_latency(
    drafter, width: int, batch: int, repeats: int, context: int = DRAFT_CONTEXT
) -> float:
    """One drafter tree step: ``width`` frontier nodes per sequence after ``context`` entries, then
    top-k."""
    c = drafter.config
    context = max(1, min(context, c.max_position_embeddings - 1))
    device = drafter.fc.weight.device
    cache = drafter.new_cache(context + width, batch=batch)
    cache.commit(context)
    hidden = torch.randn(batch, width, c.hidden_size, dtype=drafter.fc.weight.dtype, device=device)
    ids = torch.randint(0, c.vocab_size, (batch, width), device=device)
    positions = torch.full((width,), context, device=device)
    mask = torch.ones(width, context + width, dtype=torch.bool, device=device)
    key_positions = torch.cat([torch.arange(context, device=device), positions])

    def step():
        out = drafter(
            hidden, ids, cache, positions=positions, mask=mask, key_positions=key_positions
        )
        return drafter.topk(out, BRANCHING)

    return fastest_seconds(step, repeats)


def calibrate(
    model,
    drafter,
    *,
    tokens: Sequence[int] = FULL_GRID["tokens"],
    contexts: Sequence[int] = FULL_GRID["contexts"],
    batches: Sequence[int] = FULL_GRID["batches"],
    widths: Sequence[int] = FULL_GRID["widths"],
    repeats: int = FULL_GRID["repeats"],
    quick: bool = False,
    progress: bool = True,
) -> CostTable:
    """Measure every grid point; contexts beyond the model's window are dropped."""
    limit = model.config.max_position_embeddings - max(tokens)
    contexts = sorted({min(c, limit) for c in contexts if c > 0})
    tokens, batches, widths = sorted(set(tokens)), sorted(set(batches)), sorted(set(widths))
    total = len(batches) * (len(contexts) * len(tokens) + len(widths))
    bar = _progress(total, progress)
    started = time.perf_counter()
    verify, draft = [], []
    try:
        for b in batches:
            per_context = []
            for c in contexts:
                row = []
                for n in tokens:
                    row.append(verify_latency(model, n, c, b, repeats))
                    bar.update(1)
                per_context.append(row)
            verify.append(per_context)
            row = []
            for w in widths:
                row.append(draft_latency(drafter, w, b, repeats))
                bar.update(1)
            draft.append(row)
    finally:
        bar.close()
    meta = {
        "repeats": repeats,
        "seconds": round(time.perf_counter() - started, 1),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "torch": torch.__version__,
    }
    return CostTable(
        key=cost_key(model, drafter),
        tokens=list(tokens),
        contexts=list(contexts),
        batches=list(batches),
        verify=verify,
        widths=list(widths),
        draft=draft,
        quick=quick,
        meta=meta,
    )


def quick_calibrate(model, drafter, progress: bool = False) -> CostTable:
    """The small automatic grid (``QUICK_GRID``)."""
    return calibrate(model, drafter, quick=True, progress=progress, **QUICK_GRID)


def _progress(total: int, enabled: bool):
    return progress_bar(total, enabled=enabled, desc="calibrate", unit="point")
