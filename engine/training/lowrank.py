"""Stage 2 (EAGLE-4): train only the low-rank candidate head against the drafter's own full head.

The drafter body and its full head are frozen; only ``lowrank_down`` [r, H] and
``lowrank_up`` [Vd, r] train, with the forward KL(p_full || q_lowrank) over the
drafter outputs of every TTT depth (the states the tree drafting will see).
Because the body is frozen those outputs are fixed: ``collect_states`` runs the
target and the TTT unroll once (no grad) and keeps the rows on response
positions; ``train_lowrank`` then iterates over them cheaply.

Metric: candidate recall = share of the full head's top-k tokens that are among
the low-rank head's top-m candidates (m = ``lowrank_candidates``); at k = 1 this
is how often the exact best draft token survives the candidate filter.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Sequence

import torch

from ..speculative.drafter import Drafter
from .data import Record, progress_bar
from .train import _trainable, unroll_batch
from .ttt import DEFAULT_STEPS, PrefixCache, step_rows

__all__ = [
    "LowrankResult",
    "candidate_recall",
    "collect_states",
    "lowrank_kl",
    "lowrank_stage",
    "train_lowrank",
]


@dataclass
class LowrankResult:
    recall_before: dict = field(default_factory=dict)
    recall_after: dict = field(default_factory=dict)
    kl_before: float = 0.0
    kl_after: float = 0.0
    steps: int = 0
    seconds: float = 0.0
    rows: int = 0


@torch.no_grad()
def collect_states(
    target,
    drafter: Drafter,
    records: Sequence[Record],
    *,
    steps: int = DEFAULT_STEPS,
    batch_size: int = 4,
    max_length: int | None = None,
    max_rows: int | None = None,
    prefix_cache: PrefixCache | None = None,
    progress: bool = False,
) -> torch.Tensor:
    """Drafter outputs [n, H] at every TTT depth on response positions of ``records``."""
    rows: list[torch.Tensor] = []
    count = 0
    bar = progress_bar(len(records), enabled=progress, desc="states", unit="record")
    for i in range(0, len(records), batch_size):
        batch = records[i : i + batch_size]
        outputs, _, labels, start = unroll_batch(
            target, drafter, batch, steps=steps, max_length=max_length, prefix_cache=prefix_cache
        )
        for k, bi, qi, _ in step_rows(outputs, labels, start):
            rows.append(outputs[k][bi, qi].float())
            count += len(bi)
        bar.update(len(batch))
        if max_rows is not None and count >= max_rows:
            break
    bar.close()
    states = torch.cat(rows) if rows else torch.zeros(0, drafter.config.hidden_size)
    return states[:max_rows] if max_rows is not None else states


@torch.no_grad()
def candidate_recall(
    drafter: Drafter,
    states: torch.Tensor,
    top_k: Sequence[int] = (1, 4),
    candidates: int | None = None,
    chunk: int = 1024,
) -> dict:
    """{"recall@k": share of the full head's top-k inside the low-rank top-m} for each k."""
    m = min(candidates or drafter.config.lowrank_candidates, drafter.config.draft_vocab_size)
    hits = {k: 0.0 for k in top_k}
    for i in range(0, len(states), chunk):
        x = states[i : i + chunk]
        cand = drafter.lowrank_logits(x).topk(m, dim=-1).indices  # [n, m]
        full = drafter.logits(x)
        for k in top_k:
            top = full.topk(k, dim=-1).indices  # [n, k]
            hits[k] += float((top[:, :, None] == cand[:, None, :]).any(-1).float().mean(-1).sum())
    n = max(1, len(states))
    return {f"recall@{k}": round(hits[k] / n, 4) for k in top_k}


def lowrank_kl(drafter: Drafter, states: torch.Tensor) -> torch.Tensor:
    """Mean forward KL(p_full || q_lowrank) over the rows; gradients reach only the low-rank
    factors."""
    with torch.no_grad():
        logp = torch.log_softmax(drafter.logits(states).float(), dim=-1)
    logq = torch.log_softmax(drafter.lowrank_logits(states).float(), dim=-1)
    return (logp.exp() * (logp - logq)).sum(-1).mean()


@torch.no_grad()
def _mean_kl(drafter: Drafter, states: torch.Tensor, chunk: int = 1024) -> float:
    total = sum(
        float(lowrank_kl(drafter, states[i : i + chunk])) * len(states[i : i + chunk])
        for i in range(0, len(states), chunk)
    )
    return round(total / max(1, len(states)), 5)


def train_lowrank(
    drafter: Drafter,
    states: torch.Tensor,
    *,
    steps: int = 500,
    lr: float = 2e-3,
    batch_rows: int = 256,
    warmup_steps: int = 20,
    grad_clip: float = 0.5,
    seed: int = 0,
    progress: bool = True,
) -> list[float]:
    """AdamW (0.9, 0.95) on lowrank_down/up only; returns the loss per step."""
    if drafter.lowrank_down is None:
        raise ValueError("the drafter has no low-rank head (build it with lowrank_rank)")
    if len(states) == 0:
        raise ValueError("no drafter states to train the low-rank head on")
    params = _trainable(drafter, lowrank=True)
    optimizer = torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.95), weight_decay=0.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / max(1, warmup_steps))
    )
    gen = torch.Generator().manual_seed(seed)
    losses = []
    bar = progress_bar(steps, enabled=progress, desc="lowrank", unit="step")
    for _ in range(steps):
        idx = torch.randint(len(states), (min(batch_rows, len(states)),), generator=gen)
        loss = lowrank_kl(drafter, states[idx.to(states.device)])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, grad_clip)
        optimizer.step()
        scheduler.step()
        losses.append(float(loss.detach()))
        bar.update(1)
        bar.set_postfix(kl=f"{losses[-1]:.4f}")
    bar.close()
    for p in drafter.parameters():
        p.requires_grad_(False)
    return losses


def lowrank_stage(
    target,
    drafter: Drafter,
    train_records: Sequence[Record],
    val_records: Sequence[Record] = (),
    *,
    steps: int = 500,
    lr: float = 2e-3,
    batch_rows: int = 256,
    ttt_steps: int = DEFAULT_STEPS,
    batch_size: int = 4,
    max_length: int | None = None,
    max_rows: int = 200_000,
    init_from_svd: bool = True,
    top_k: Sequence[int] = (1, 4),
    seed: int = 0,
    progress: bool = True,
) -> LowrankResult:
    """SVD init (optional), collect states, train the low-rank factors; recall before/after on
    held-out states."""
    started = time.perf_counter()
    if init_from_svd:
        drafter.init_lowrank_from_head()
    cache = PrefixCache(target)
    states = collect_states(
        target,
        drafter,
        train_records,
        steps=ttt_steps,
        batch_size=batch_size,
        max_length=max_length,
        max_rows=max_rows,
        prefix_cache=cache,
        progress=progress,
    )
    held = (
        collect_states(
            target,
            drafter,
            val_records,
            steps=ttt_steps,
            batch_size=batch_size,
            max_length=max_length,
            prefix_cache=cache,
        )
        if val_records
        else states
    )
    result = LowrankResult(rows=len(states))
    result.recall_before, result.kl_before = (
        candidate_recall(drafter, held, top_k),
        _mean_kl(drafter, held),
    )
    train_lowrank(
        drafter, states, steps=steps, lr=lr, batch_rows=batch_rows, seed=seed, progress=progress
    )
    result.recall_after, result.kl_after = (
        candidate_recall(drafter, held, top_k),
        _mean_kl(drafter, held),
    )
    result.steps = steps
    result.seconds = time.perf_counter() - started
    return result
