"""Training-time test (EAGLE-3): unroll the drafter K steps on a sequence, as at serving time.

Sequence x_0..x_{T-1} with target features f_i (fused taps). Step 0: the drafter
input at position i is (fuse(f_i), x_{i+1}) and its output o^0_i predicts the
target's distribution at position i+1 (the distribution of x_{i+2}). Step k
(1..K-1): the input at position i is (o^{k-1}_i, x_{i+k+1}), rope position i+k,
and o^k_i predicts the target's distribution at position i+k+1. This is what a
draft chain of depth k+1 below a root at position i looks like at serving time
(``engine.speculative.loop``: tree node at depth d has position root + d).

Attention: the keys of all steps are concatenated, step 0's first. A query of
step k at position i sees the step-0 keys j <= i (its "prefix") plus the key at
position i of every step 1..k (its own ancestors and itself). ``ttt_mask``
builds that boolean matrix; the drafter applies its sliding window on top of it
from the key positions, exactly as at serving time.

Speed-up with identical results: steps k >= 1 only run for positions
i >= ``start`` (a query of a later step depends only on step-0 keys and on its
own position's chain); with start = first label position - K nothing that
reaches the loss is dropped.

Loss: sum_k decay^k * mean over valid rows of the soft cross-entropy
-sum_v p_target(v) log q_draft(v) over the draft vocabulary; p_target is the
target's softmax restricted to the draft vocabulary and renormalised (= softmax
of the restricted logits). Valid rows: the target position i+k+1 is < T and
the token it predicts is a response token (``label_mask``).

Target features are computed on the fly with the frozen target in inference
mode (``target_features``), reusing the KV/taps of shared chat prefixes
(system prompt + few-shot examples) through a ``PrefixCache``.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Sequence

import torch
import torch.nn.functional as F

DEFAULT_STEPS = 7
DEFAULT_DECAY = 0.8

__all__ = [
    "DEFAULT_DECAY",
    "DEFAULT_STEPS",
    "PrefixCache",
    "TTTLoss",
    "TargetFeatures",
    "label_mask",
    "steps_start",
    "target_features",
    "ttt_forward",
    "ttt_loss",
    "ttt_mask",
    "ttt_positions",
]


# ---- layout --------------------------------------------------------------------------------------
def ttt_mask(
    length: int, steps: int, start: int = 0, device: torch.device | str | None = None
) -> torch.Tensor:
    """Bool [N, N] over the concatenated queries/keys of all steps (True = may attend).

    Step 0 has ``length`` rows (positions 0..T-1); steps 1..K-1 have T - start rows each
    (positions start..T-1), so N = T + (K-1)(T-start). Row (k, i) sees step-0 keys j <= i
    and the key (k', i) of every step 1 <= k' <= k.
    """
    if steps < 1 or not 0 <= start < length:
        raise ValueError(
            "need steps >= 1 and 0 <= start < length, "
            f"got steps={steps} start={start} length={length}"
        )
    t, tq = length, length - start
    n = t + (steps - 1) * tq
    mask = torch.zeros(n, n, dtype=torch.bool, device=device)
    mask[:t, :t] = torch.ones(t, t, dtype=torch.bool, device=device).tril()
    prefix = (
        torch.arange(start, t, device=device)[:, None] >= torch.arange(t, device=device)[None, :]
    )
    diagonal = torch.eye(tq, dtype=torch.bool, device=device)
    for k in range(1, steps):
        rows = slice(t + (k - 1) * tq, t + k * tq)
        mask[rows, :t] = prefix
        for earlier in range(1, k + 1):
            mask[rows, t + (earlier - 1) * tq : t + earlier * tq] = diagonal
    return mask


def ttt_positions(
    length: int, steps: int, start: int = 0, device: torch.device | str | None = None
) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Rope positions: per step the query positions (step k: i + k), and all keys concatenated."""
    queries = [torch.arange(length, device=device)]
    queries += [torch.arange(start, length, device=device) + k for k in range(1, steps)]
    return queries, torch.cat(queries)


def label_mask(loss_mask: torch.Tensor) -> torch.Tensor:
    """loss_mask [B, T] (1 = response token) -> bool [B, T]: the target distribution at
    position j is a training label iff token j+1 is a response token (none at the last position)."""
    labels = torch.zeros(loss_mask.shape, dtype=torch.bool, device=loss_mask.device)
    labels[:, :-1] = loss_mask[:, 1:].bool()
    return labels


def steps_start(labels: torch.Tensor, steps: int) -> int:
    """First position whose step>=1 chain can reach a label: min first label - steps (>= 0)."""
    rows = labels.any(0).nonzero()
    if len(rows) == 0:
        return 0
    return max(0, min(int(rows[0]) - steps, labels.shape[1] - 1))


# ---- unroll --------------------------------------------------------------------------------------
def ttt_forward(
    drafter, hidden: torch.Tensor, tokens: torch.Tensor, steps: int = DEFAULT_STEPS, start: int = 0
) -> list[torch.Tensor]:
    """Unroll the drafter; returns per step its outputs: step 0 [B, T, H], step k [B, T-start, H].

    hidden: fused target features [B, T, H] (``drafter.fuse(taps)``); tokens [B, T]
    (right padding is harmless: no real query sees a later key). Works with and
    without autograd; the cache (sized for all steps) is local to the call.
    """
    b, t = tokens.shape
    device = tokens.device
    mask = ttt_mask(t, steps, start, device)
    queries, keys = ttt_positions(t, steps, start, device)
    cache = drafter.new_cache(mask.shape[0], batch=b)
    padded = F.pad(tokens, (0, steps + 1), value=0)  # x_{i+k+1} past the end: never a label
    outputs: list[torch.Tensor] = []
    for k in range(steps):
        first = 0 if k == 0 else start
        n = queries[k].numel()
        if k == 0:
            h = hidden
        else:
            h = outputs[0][:, start:] if k == 1 else outputs[-1]
        step_tokens = padded[:, first + k + 1 : first + k + 1 + n]
        begin, end = cache.length, cache.length + n
        out = drafter(
            h,
            step_tokens,
            cache,
            positions=queries[k],
            mask=mask[begin:end, :end],
            key_positions=keys[:end],
        )
        cache.commit(n)
        outputs.append(out)
    return outputs


# ---- target side ---------------------------------------------------------------------------------
@dataclass
class _PrefixEntry:
    k: torch.Tensor  # [L, 1, Hkv, P, D]
    v: torch.Tensor
    taps: torch.Tensor | None  # [1, P, 3H]


class PrefixCache:
    """LRU of the target's KV (and taps) for shared prompt prefixes, keyed by their token ids."""

    def __init__(self, model, max_entries: int = 16) -> None:
        self.model, self.max_entries = model, max_entries
        self._entries: OrderedDict[tuple[int, ...], _PrefixEntry] = OrderedDict()
        self.hits = self.misses = 0

    def get(self, ids: Sequence[int], taps: bool = False) -> _PrefixEntry:
        key = tuple(int(i) for i in ids)
        entry = self._entries.get(key)
        if entry is not None and (entry.taps is not None or not taps):
            self._entries.move_to_end(key)
            self.hits += 1
            return entry
        self.misses += 1
        p = len(key)
        cache = self.model.new_cache(p)
        device = cache.k.device
        out = self.model(
            torch.tensor([key], device=device), cache, logits_at=slice(0, 0), taps=taps
        )
        entry = _PrefixEntry(
            cache.k[:, :, :, :p].clone(),
            cache.v[:, :, :, :p].clone(),
            out.taps.clone() if taps else None,
        )
        self._entries[key] = entry
        if len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
        return entry

    def load_into(self, cache, row: int, entry: _PrefixEntry) -> None:
        p = entry.k.shape[3]
        cache.k[:, row, :, :p] = entry.k[:, 0]
        cache.v[:, row, :, :p] = entry.v[:, 0]


@dataclass
class TargetFeatures:
    taps: torch.Tensor  # [B, T, 3H]
    logits: (
        torch.Tensor
    )  # [B, L, Vd] target logits at positions offset..offset+L-1, draft vocab only
    argmax: torch.Tensor  # [B, L] the target's argmax (target ids, full vocabulary)
    offset: int


def target_features(
    model,
    sequences: Sequence[Sequence[int]],
    labels: torch.Tensor,
    *,
    vocab_ids: torch.Tensor | None = None,
    prefix_lens: Sequence[int] | None = None,
    prefix_cache: PrefixCache | None = None,
) -> TargetFeatures:
    """Run the frozen target on each sequence (right-padded into [B, T]); logits only where labels
    are.

    vocab_ids: target ids of the draft vocabulary (None = full vocabulary).
    prefix_lens: per sequence, a prefix shared with other sequences (served from ``prefix_cache``).
    """
    b, t = labels.shape
    cfg = model.config
    device = model.lm_head.weight.device
    has = labels.any(0).nonzero()
    offset = int(has[0]) if len(has) else t - 1
    width = cfg.vocab_size if vocab_ids is None else len(vocab_ids)
    taps = torch.zeros(b, t, 3 * cfg.hidden_size, dtype=torch.float32, device=device)
    logits = torch.zeros(b, t - offset, width, dtype=torch.float32, device=device)
    argmax = torch.zeros(b, t - offset, dtype=torch.long, device=device)
    with torch.no_grad():
        for row, seq in enumerate(sequences):
            n = len(seq)
            row_labels = labels[row, :n].nonzero()
            first = int(row_labels[0]) if len(row_labels) else n - 1
            p = min(prefix_lens[row] if prefix_lens else 0, first)
            cache = model.new_cache(n)
            tapped = []
            if prefix_cache is not None and p >= 1:
                entry = prefix_cache.get(seq[:p], taps=True)
                prefix_cache.load_into(cache, 0, entry)
                cache.commit(p)
                tapped.append(entry.taps)
            else:
                p = 0
            ids = torch.tensor([list(seq[p:])], device=device)
            out = model(ids, cache, taps=True, logits_at=slice(first - p, None))
            tapped.append(out.taps)
            taps[row, :n] = torch.cat(tapped, dim=1)[0].float()
            full = out.logits[0].float()  # [n - first, V]
            argmax[row, first - offset : n - offset] = full.argmax(-1)
            logits[row, first - offset : n - offset] = (
                full if vocab_ids is None else full[:, vocab_ids.to(device)]
            )
    return TargetFeatures(taps, logits, argmax, offset)


# ---- loss ----------------------------------------------------------------------------------------
@dataclass
class TTTLoss:
    loss: torch.Tensor  # scalar, differentiable
    step_loss: list[float] = field(default_factory=list)
    step_acc: list[float] = field(
        default_factory=list
    )  # draft argmax == target argmax (target ids)
    step_count: list[int] = field(default_factory=list)

    def summary(self) -> dict:
        return {
            "loss": float(self.loss.detach()),
            "step_loss": [round(x, 4) for x in self.step_loss],
            "step_acc": [round(x, 4) for x in self.step_acc],
            "step_count": self.step_count,
        }


def step_rows(outputs: Sequence[torch.Tensor], labels: torch.Tensor, start: int):
    """Per step k: (batch idx, query idx, target position j) of the valid rows."""
    b, t = labels.shape
    for k, out in enumerate(outputs):
        first = 0 if k == 0 else start
        j = (
            torch.arange(first, first + out.shape[1], device=labels.device) + k + 1
        )  # target position
        inside = j < t
        valid = labels[:, j.clamp(max=t - 1)] & inside[None, :]
        bi, qi = valid.nonzero(as_tuple=True)
        yield k, bi, qi, j[qi]


def ttt_loss(
    drafter,
    outputs: Sequence[torch.Tensor],
    features: TargetFeatures,
    labels: torch.Tensor,
    start: int = 0,
    decay: float = DEFAULT_DECAY,
) -> TTTLoss:
    """sum_k decay^k * soft cross-entropy(p_target, log q_draft) over the draft vocabulary."""
    total = outputs[0].new_zeros(())
    result = TTTLoss(total)
    for k, bi, qi, j in step_rows(outputs, labels, start):
        if len(bi) == 0:
            result.step_loss.append(0.0)
            result.step_acc.append(0.0)
            result.step_count.append(0)
            continue
        logq = drafter.logprobs(outputs[k][bi, qi])  # [n, Vd]
        tpos = j - features.offset
        p = torch.softmax(features.logits[bi, tpos], dim=-1)  # restricted + renormalised
        ce = -(p * logq).sum(-1).mean()
        total = total + decay**k * ce
        with torch.no_grad():
            hit = drafter.draft_to_target(logq.argmax(-1)) == features.argmax[bi, tpos]
        result.step_loss.append(float(ce.detach()))
        result.step_acc.append(float(hit.float().mean()))
        result.step_count.append(int(len(bi)))
    result.loss = total
    return result
