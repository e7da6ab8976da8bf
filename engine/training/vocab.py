"""Reduced draft vocabulary: the N most frequent target tokens of the training data.

``token_counts`` counts tokens (response tokens by default: those the drafter
must predict); ``select_draft_vocab`` keeps the N most frequent (ties: smaller
id first; always-included ids such as EOS first; filled up with the smallest
unused ids when the data has fewer distinct tokens) and returns them sorted,
so ``d2t`` is non-negative and non-decreasing as in public EAGLE-3 drafters;
``apply_draft_vocab`` installs the map (``Drafter.set_vocab_map``: d2t/t2d)
and initialises the drafter's own head from the target's rows.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import torch

__all__ = ["apply_draft_vocab", "select_draft_vocab", "token_counts", "vocab_coverage"]


def token_counts(
    sequences: Iterable[Sequence[int]],
    vocab_size: int,
    masks: Iterable[Sequence[int]] | None = None,
) -> torch.Tensor:
    """Counts [vocab_size] of the tokens (only where the mask is 1, when masks are given)."""
    counts = torch.zeros(vocab_size, dtype=torch.long)
    masks = iter(masks) if masks is not None else None
    for seq in sequences:
        ids = torch.as_tensor(list(seq), dtype=torch.long)
        if masks is not None:
            ids = ids[torch.as_tensor(list(next(masks)), dtype=torch.bool)]
        if len(ids) and (int(ids.min()) < 0 or int(ids.max()) >= vocab_size):
            raise ValueError(f"token id outside the vocabulary 0..{vocab_size - 1}")
        counts += torch.bincount(ids, minlength=vocab_size)
    return counts


def select_draft_vocab(counts: torch.Tensor, size: int, always: Sequence[int] = ()) -> torch.Tensor:
    """Target ids [size] (ascending) of the draft vocabulary."""
    vocab = len(counts)
    if not 0 < size <= vocab:
        raise ValueError(f"draft vocabulary size {size} must be in 1..{vocab}")
    always = list(dict.fromkeys(int(a) for a in always))[:size]
    # stable sort by descending count: equal counts keep ascending id order
    order = torch.sort(-counts.long(), stable=True).indices
    chosen = list(always)
    taken = set(chosen)
    for tid in order.tolist():
        if len(chosen) == size or counts[tid] == 0:
            break
        if tid not in taken:
            chosen.append(tid)
            taken.add(tid)
    for tid in range(vocab):  # unseen tokens: smallest ids first
        if len(chosen) == size:
            break
        if tid not in taken:
            chosen.append(tid)
            taken.add(tid)
    return torch.tensor(sorted(chosen), dtype=torch.long)


def vocab_coverage(counts: torch.Tensor, target_ids: torch.Tensor) -> float:
    """Share of the counted tokens that the draft vocabulary contains."""
    total = int(counts.sum())
    return float(counts[target_ids].sum()) / total if total else 0.0


@torch.no_grad()
def apply_draft_vocab(drafter, target_ids: torch.Tensor, target=None) -> None:
    """Install d2t/t2d; with ``target``, copy the target's head rows into the drafter's head."""
    drafter.set_vocab_map(target_ids)
    if target is not None and drafter.lm_head is not None:
        rows = target.lm_head.weight.detach()[target_ids.to(target.lm_head.weight.device)]
        drafter.lm_head.weight.copy_(rows.to(drafter.lm_head.weight.dtype))
