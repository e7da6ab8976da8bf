"""Sampling parameters and the logits processors shared by every decoder.

The reference decoder and the speculative verifier both call these, so a
token's distribution is computed the same way in both. History-dependent
processing (repetition penalty) takes the history of one sequence or of one
tree node's own ancestor path; it never sees sibling branches.

Order (as in Hugging Face): repetition penalty, banned tokens, temperature,
top-k, top-p. The repetition penalty covers generated tokens only, not the
prompt. Banned tokens (``TokenMask``, a per-request constraint the caller
builds) get probability zero everywhere a token is chosen or verified, so a
constrained speculative decode still equals the constrained plain decode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch


class TokenMask:
    """Token ids that must never be chosen (a decoding constraint); compared by identity."""

    __slots__ = ("ids", "_tensors")

    def __init__(self, ids) -> None:
        self.ids = tuple(sorted({int(i) for i in ids}))
        self._tensors: dict[torch.device, torch.Tensor] = {}

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self) -> str:
        return f"TokenMask({len(self.ids)} ids)"

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        """``logits`` [V] with the banned ids set to -inf (a new tensor)."""
        index = self._tensors.get(logits.device)
        if index is None:
            index = self._tensors[logits.device] = torch.tensor(
                self.ids, dtype=torch.long, device=logits.device
            )
        return logits.index_fill(0, index, float("-inf"))


@dataclass(frozen=True)
class SamplingParams:
    """How to pick tokens. ``temperature == 0`` means greedy (argmax)."""

    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    repetition_penalty: float = 1.0
    max_new_tokens: int = 256
    seed: int | None = None
    stop_strings: tuple[str, ...] = ()
    banned: TokenMask | None = None

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError("temperature must be >= 0")
        if not 0 < self.top_p <= 1:
            raise ValueError("top_p must be in (0, 1]")
        if self.top_k < 0:
            raise ValueError("top_k must be >= 0")
        if self.repetition_penalty <= 0:
            raise ValueError("repetition_penalty must be > 0")
        if self.max_new_tokens < 0:
            raise ValueError("max_new_tokens must be >= 0")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


def penalize_repetition(
    logits: torch.Tensor, history: Sequence[int], penalty: float
) -> torch.Tensor:
    """Return ``logits`` [V] with tokens in ``history`` made less likely (CTRL rule)."""
    if penalty == 1.0 or len(history) == 0:
        return logits
    ids = torch.tensor(sorted(set(history)), dtype=torch.long, device=logits.device)
    picked = logits.index_select(0, ids)
    picked = torch.where(picked > 0, picked / penalty, picked * penalty)
    return logits.index_copy(0, ids, picked)


def processed_logits(
    logits: torch.Tensor, history: Sequence[int], params: SamplingParams
) -> torch.Tensor:
    """Float32 logits [V] after repetition penalty, banned tokens (and temperature when
    sampling)."""
    out = penalize_repetition(logits.float(), history, params.repetition_penalty)
    if params.banned:
        out = params.banned.apply(out)
    if not params.greedy:
        out = out / params.temperature
    return out


def filter_top_k_top_p(logits: torch.Tensor, top_k: int, top_p: float) -> torch.Tensor:
    """Mask logits [V] outside the top-k set and outside the top-p nucleus with -inf.

    Both sets keep every token tied with their last member, so the result does not depend
    on how a sort orders equal logits (bf16 logits tie often)."""
    if top_k and top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k).values[-1]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits = torch.sort(logits, descending=True).values
        kept = nucleus_size(torch.softmax(sorted_logits, dim=-1), top_p)
        logits = logits.masked_fill(logits < sorted_logits[kept - 1], float("-inf"))
    return logits


def nucleus_size(sorted_probs: torch.Tensor, top_p: float) -> int:
    """How many of ``sorted_probs`` (descending) the top-p nucleus takes, at least one: a token
    is in while the mass before it is below top_p. (Tokens tied with the last one join it.)"""
    return max(int(((sorted_probs.cumsum(-1) - sorted_probs) < top_p).sum()), 1)


def next_token_distribution(
    logits: torch.Tensor, history: Sequence[int], params: SamplingParams
) -> torch.Tensor:
    """Probabilities [V] (float32) of the next token when sampling."""
    return _distribution(processed_logits(logits, history, params), params)


def _distribution(processed: torch.Tensor, params: SamplingParams) -> torch.Tensor:
    return torch.softmax(filter_top_k_top_p(processed, params.top_k, params.top_p), dim=-1)


def greedy_token(logits: torch.Tensor, history: Sequence[int], params: SamplingParams) -> int:
    """The argmax token after the repetition penalty."""
    return int(torch.argmax(processed_logits(logits, history, params)))


def make_generator(seed: int | None) -> torch.Generator:
    """A CPU generator seeded from ``seed`` (random when None)."""
    gen = torch.Generator()
    if seed is None:
        gen.seed()
    else:
        gen.manual_seed(seed)
    return gen


def sample_from(probs: torch.Tensor, generator: torch.Generator) -> int:
    """Draw one token id from probabilities [V]."""
    return int(torch.multinomial(probs.cpu(), 1, generator=generator))


# the sampler looks at this many top tokens first; the nucleus almost always lies inside
CANDIDATES = 256
# then at this many (a flat distribution), and only then sorts the whole vocabulary
CANDIDATE_TIERS = (CANDIDATES, 4096)


def _candidate_distribution(
    logits: torch.Tensor, params: SamplingParams, candidates: int = CANDIDATES
):
    """(ids, probabilities) of the top-k / top-p set when it lies within the top ``candidates``
    tokens, else None. Equal to ``next_token_distribution`` restricted to its support."""
    vocab = logits.shape[-1]
    top_k = params.top_k if params.top_k and params.top_k < vocab else 0
    within = bool(top_k) and top_k <= candidates  # the top-k set itself fits
    k = top_k if within else candidates
    if (params.top_p >= 1.0 and not within) or k >= vocab:
        return None
    values, ids = torch.topk(logits, k + 1)
    after, values, ids = values[k], values[:k], ids[:k]  # ``after``: the best token left out
    if within:
        if values[-1] == after:
            return None
        probs = torch.softmax(values, dim=-1)  # top-k first, then top-p on what is left
    else:
        kept = logits if not top_k else logits[logits >= torch.topk(logits, top_k).values[-1]]
        probs = torch.exp(values - torch.logsumexp(kept, dim=-1))
        if float(probs.sum()) < params.top_p:
            return None  # the nucleus reaches past the candidates
    if params.top_p < 1.0:
        kept = nucleus_size(probs, params.top_p)
        if not within and after == values[kept - 1]:
            return None  # the edge's tie group reaches past them
        probs = probs.masked_fill(values < values[kept - 1], 0.0)  # ties with the last member stay
    return ids, probs / probs.sum()


def sample_token(
    logits: torch.Tensor, history: Sequence[int], params: SamplingParams, generator: torch.Generator
) -> int:
    """Draw the next token from ``next_token_distribution``; over the top candidates only when
    they hold the whole top-k / top-p set (a 49k-way sort per token costs milliseconds)."""
    processed = processed_logits(logits, history, params)
    for size in CANDIDATE_TIERS:
        candidates = _candidate_distribution(processed, params, size)
        if candidates is not None:
            ids, probs = candidates
            return int(ids[sample_from(probs, generator)])
    return sample_from(_distribution(processed, params), generator)


def pick_token(
    logits: torch.Tensor, history: Sequence[int], params: SamplingParams, generator: torch.Generator
) -> int:
    """One decoding step's choice: greedy or sampled."""
    if params.greedy:
        return greedy_token(logits, history, params)
    return sample_token(logits, history, params, generator)
