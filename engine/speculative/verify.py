"""Lossless verification of a draft tree against the target's logits.

One call per speculative round. Input: the ``DraftTree``, the target's logits
[N+1, V] from one forward pass over (root, nodes...) (row 0 = after the root,
row i+1 = after node i), the tokens generated so far in this call (for the
repetition penalty) and the sampling parameters. Output: the accepted path
and the tokens to emit (accepted draft tokens + one bonus token).

Every node's distribution comes from ``engine.decode.sampling`` with the node's own
history (``history`` + the tokens on its root path, never sibling branches),
so the emitted tokens follow the reference decoder's distribution exactly
(greedy: token for token). Sampling uses the rule for deterministic top-k
drafts (DESIGN 3.4): try children in draft order, accept child x with
probability p(x), else zero p(x) and renormalise; when all are rejected draw
the bonus from what is left. The random draws differ from the reference
decoder's, so seeded sampled output matches it in distribution, not per seed; a tree
without nodes (a round that drafts nothing: plain decoding) draws its one token exactly as
the reference decoder does (``pick_token``), so such rounds match it per seed too.

Not here: building the tree (``engine.speculative.tree``), running the target, KV cache
compaction (use ``VerifyResult.kept_rows``), stop handling.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from ..decode.sampling import (
    SamplingParams,
    greedy_token,
    next_token_distribution,
    pick_token,
    sample_from,
)
from .tree import DraftTree


@dataclass
class VerifyResult:
    """What one round produced.

    ``accepted_nodes``: tree node indices along the accepted path (root excluded).
    ``tokens``: the accepted draft tokens then the bonus token (len = accepted + 1).
    ``bonus_row``: the row of ``target_logits`` the bonus came from.
    """

    accepted_nodes: list[int]
    tokens: list[int]
    bonus_row: int

    @property
    def num_accepted(self) -> int:
        return len(self.accepted_nodes)

    @property
    def kept_rows(self) -> list[int]:
        """Rows of the verify pass (root, accepted nodes) whose KV entries to keep, ascending."""
        return [0] + [node + 1 for node in self.accepted_nodes]


def verify(
    tree: DraftTree,
    target_logits: torch.Tensor,
    history: Sequence[int],
    params: SamplingParams,
    generator: torch.Generator | None = None,
) -> VerifyResult:
    """Greedy or sampled verification, as ``params`` says."""
    if tree.size == 0 and generator is not None:  # nothing drafted: the reference decoder's step
        _check_logits(tree, target_logits)
        return VerifyResult([], [pick_token(target_logits[0], history, params, generator)], 0)
    if params.greedy:
        return verify_greedy(tree, target_logits, history, params)
    if generator is None:
        raise ValueError("sampled verification needs a generator")
    return verify_sampling(tree, target_logits, history, params, generator)


def verify_greedy(
    tree: DraftTree, target_logits: torch.Tensor, history: Sequence[int], params: SamplingParams
) -> VerifyResult:
    """Follow the children equal to the target's argmax; the target's token at the end is the
    bonus."""
    _check_logits(tree, target_logits)
    node_history = list(history)
    accepted: list[int] = []
    node = -1
    while True:
        row = node + 1
        choice = greedy_token(target_logits[row], node_history, params)
        child = _child_with_token(tree, node, choice)
        if child is None:
            return VerifyResult(accepted, [tree.token_list[i] for i in accepted] + [choice], row)
        accepted.append(child)
        node_history.append(choice)
        node = child


def verify_sampling(
    tree: DraftTree,
    target_logits: torch.Tensor,
    history: Sequence[int],
    params: SamplingParams,
    generator: torch.Generator,
) -> VerifyResult:
    """Accept children with probability p(x) over the residual; sample the bonus from the
    residual."""
    _check_logits(tree, target_logits)
    node_history = list(history)
    accepted: list[int] = []
    node = -1
    while True:
        row = node + 1
        p = next_token_distribution(target_logits[row], node_history, params)  # [V] float32
        child, residual = _try_children(tree, node, p, generator)
        if child is None:
            bonus = sample_from(residual, generator)
            return VerifyResult(accepted, [tree.token_list[i] for i in accepted] + [bonus], row)
        accepted.append(child)
        node_history.append(tree.token_list[child])
        node = child


def _try_children(
    tree: DraftTree, node: int, p: torch.Tensor, generator: torch.Generator
) -> tuple[int | None, torch.Tensor]:
    """(accepted child or None, the renormalised residual [V] after all rejections).

    Renormalising after each rejection is done on the scalar ``mass`` left:
    accepting x with probability p(x) / mass is the same as zeroing the
    rejected tokens of p, renormalising, and accepting with the new p(x).
    """
    children = tree.children_of(node)
    if not children:
        return None, p
    tokens = torch.tensor([tree.token_list[c] for c in children], device=p.device)  # [c]
    p_children = p[tokens].tolist()
    uniforms = torch.rand(
        len(children), generator=generator, dtype=torch.float64, device=generator.device
    ).tolist()  # [c]
    mass = float(p.sum())
    last_possible = None
    for child, p_token, u in zip(children, p_children, uniforms):
        if u * mass < p_token:
            return child, p
        mass -= p_token
        last_possible = child if p_token > 0 else last_possible
    residual = p.index_fill(0, tokens, 0.0)
    total = float(residual.sum())
    if total <= 0.0:
        # All of p sat on the tried tokens, so the last rejection of one with
        # positive mass was a rounding artefact (its true probability was 1).
        return last_possible, p
    return None, residual / total


def _child_with_token(tree: DraftTree, node: int, token: int) -> int | None:
    for child in tree.children_of(node):  # siblings are distinct: at most one matches
        if tree.token_list[child] == token:
            return child
    return None


def _check_logits(tree: DraftTree, target_logits: torch.Tensor) -> None:
    if target_logits.dim() != 2 or target_logits.shape[0] != tree.size + 1:
        raise ValueError(
            f"target_logits must be [N+1, V] = [{tree.size + 1}, V], "
            f"got {tuple(target_logits.shape)}"
        )
