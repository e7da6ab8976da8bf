"""How likely the model finds each of several continuations of a prefix, in one pass.

Every prefix and continuation is packed into one sequence: a prefix sees
itself causally, a continuation its own prefix and its own earlier tokens only
(a mask like a draft tree's, each continuation a branch of its own). What ranks
vetted phrases for a prompt (``promptx.compose``): one short pass instead of a
decode.

Not here: sampling or decoding (``engine.decode.autoregressive``), the text
a continuation is made of (the caller tokenizes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch


@dataclass(frozen=True)
class ContinuationScore:
    """The summed log-probability of a continuation's scored tokens and how many there were."""

    logprob: float
    tokens: int

    @property
    def mean(self) -> float:
        return self.logprob / self.tokens if self.tokens else 0.0


@dataclass(frozen=True)
class ScoringGroup:
    """A prefix and the continuations scored after it; ``scored_from[i]``: leading tokens of
    continuation i that are context, not scored (a frame such as "The camera")."""

    prefix: Sequence[int]
    continuations: Sequence[Sequence[int]]
    scored_from: Sequence[int] | None = None


def score_continuations(
    model,
    prefix: Sequence[int],
    continuations: Sequence[Sequence[int]],
    scored_from: Sequence[int] | None = None,
) -> list[ContinuationScore]:
    """Each continuation's log-probability after ``prefix`` (which must not be empty)."""
    return score_groups(model, [ScoringGroup(prefix, continuations, scored_from)])[0]


def score_groups(model, groups: Sequence[ScoringGroup]) -> list[list[ContinuationScore]]:
    """Every group's continuation scores, all groups in one forward pass."""
    for group in groups:
        _check(group)
    device = model.embed_tokens.weight.device
    tokens, positions, mask, rows = _packed(groups, device)
    wanted = sorted({r for per_group in rows for per_cont in per_group for r, _ in per_cont})
    at = {r: i for i, r in enumerate(wanted)}
    cache = model.new_cache(capacity=len(tokens) + 1)
    with torch.inference_mode():
        out = model(
            torch.tensor([tokens], device=device),
            cache,
            positions=positions,
            mask=mask,
            logits_at=torch.tensor(wanted, device=device),
        )
        logp = torch.log_softmax(out.logits[0].float(), dim=-1)
    return [
        [
            ContinuationScore(sum(float(logp[at[r], t]) for r, t in per_cont), len(per_cont))
            for per_cont in per_group
        ]
        for per_group in rows
    ]


def _check(group: ScoringGroup) -> None:
    if not group.prefix:
        raise ValueError("scoring needs a non-empty prefix")
    if not group.continuations or min(len(c) for c in group.continuations) == 0:
        raise ValueError("every continuation needs at least one token")
    if group.scored_from is not None and len(group.scored_from) != len(group.continuations):
        raise ValueError("scored_from needs one entry per continuation")


def _packed(groups: Sequence[ScoringGroup], device):
    """The packed tokens, rope positions, mask [T, T] and, per continuation, the (row whose
    logits predict it, token) pairs of its scored tokens."""
    tokens: list[int] = []
    spans: list[tuple[int, int, int]] = []  # (start, length, first position) of each segment
    parents: list[int] = []  # segment index a continuation's prefix is at
    rows: list[list[list[tuple[int, int]]]] = []
    for group in groups:
        prefix_at = len(tokens)
        spans.append((prefix_at, len(group.prefix), 0))
        parents.append(-1)
        prefix_segment = len(spans) - 1
        tokens.extend(group.prefix)
        skips = group.scored_from or [0] * len(group.continuations)
        per_group = []
        for cont, skip in zip(group.continuations, skips):
            start = len(tokens)
            spans.append((start, len(cont), len(group.prefix)))
            parents.append(prefix_segment)
            tokens.extend(cont)
            last_prefix_row = prefix_at + len(group.prefix) - 1
            per_group.append(
                [
                    (last_prefix_row if j == 0 else start + j - 1, cont[j])
                    for j in range(max(skip, 0), len(cont))
                ]
            )
        rows.append(per_group)
    total = len(tokens)
    mask = torch.zeros(total, total, dtype=torch.bool, device=device)
    positions = torch.empty(total, dtype=torch.long, device=device)
    for (start, n, first), parent in zip(spans, parents):
        block = slice(start, start + n)
        mask[block, block] = torch.ones(n, n, dtype=torch.bool, device=device).tril()
        positions[block] = torch.arange(first, first + n, device=device)
        if parent >= 0:
            p_start, p_n, _ = spans[parent]
            mask[block, p_start : p_start + p_n] = True
    return tokens, positions, mask, rows
