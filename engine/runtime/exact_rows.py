"""Exact half precision: every row of a pass computed as its own single-token step would.

Greedy speculative decoding equals plain decoding only if a token's logits
in a verification pass of several tokens are bit for bit those of the
single-token step that plain decoding runs at that position. In fp32 the
last-bit differences between kernels practically never flip a greedy choice;
in bf16 they do, because the output is rounded to 8 bits of mantissa and
near-ties are common. Three things differ between the passes on a CPU, and
``make_rows_exact`` removes each (batch 1, CPU, bf16/fp16):
- matmul kernels are chosen by the number of rows (a matrix-vector kernel
  for one row): ``min_exact_rows`` probes per weight shape and thread count
  the smallest row count from which every pass agrees, and ``PaddedLinear``
  pads smaller passes up to it (free: these products are bound by reading
  the weights);
- the fused attention kernel blocks query rows and splits work across
  threads: ``layers.attend_rows`` runs each token as its own batch element
  on one thread, over a span of keys aligned to ``kv_cache.KEY_ALIGN``
  (the kernel's last partial vector of keys is summed differently);
- the kernel sums keys per vector lane (on AVX-512 over two interleaved
  16-float vectors: a key moved by 16 slots changed a sum in a 100-prompt
  check, by 32 never): a draft-tree node must sit at a slot congruent to its
  position, so trees are laid out in columns ``LANE_STRIDE`` slots apart
  (``speculative.loop.tree_slots``), never left of the parent's column (a row
  then meets its keys in position order, as plain decoding does: keys out of
  order flipped a bf16 output in a real 128-token decode), and in the
  ``KEY_BLOCK`` of keys of its
  position (the kernel merges blocks of keys one after another): nodes that
  would land in a later block are not verified (``speculative.loop.fit_lanes``;
  next to a block boundary).
Some kernels (seen on an AMX Xeon with torch 2.13) sum a row's keys in groups
that no lane layout keeps: a key moved to another column changes the sum.
``shifted_keys_stay_exact`` probes that once per process; where it fails,
only the first column of a tree (its greedy chain, at contiguous slots) is
verified (``TreeLayout.max_columns``).

Not here: the mixed and int8 precisions (plain decoding only).
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
from torch import nn

from .kv_cache import aligned
from .layers import attend_rows
from .layout import TreeLayout
from .model import Attention, RowwiseAttention, Transformer, aligned_mask
from .registered import parameter

ROW_COUNTS = (1, 2, 3, 4, 8, 16)  # candidate minimum pass sizes, smallest first
HALF = (torch.bfloat16, torch.float16)
LANE_STRIDE = 32  # tree columns this many slots apart (see the module docstring)
KEY_BLOCK = (
    512  # the CPU attention kernel's block of keys: a key must sit in the block of its position
)
_PROBED: dict[tuple, int] = {}  # (shape, dtype, device, threads) -> minimum rows


def min_exact_rows(weight: torch.Tensor) -> int:
    """The smallest M in ``ROW_COUNTS`` such that passes of M or more rows through ``weight``
    give every row the numbers it gets in any larger pass, for this weight's shape, dtype and
    device at the current thread count (probed once with ``weight``)."""
    key = (tuple(weight.shape), weight.dtype, str(weight.device), torch.get_num_threads())
    if key not in _PROBED:
        _PROBED[key] = _probe(weight)
    return _PROBED[key]


def _probe(weight: torch.Tensor) -> int:
    """Chunks of M rows against one pass of R rows and of 2R (R up to 64, heavy-tailed inputs);
    the largest candidate when no M agrees (exactness is then not promised)."""
    out_features, in_features = weight.shape
    rows = max(16, min(64, 65536 // out_features))
    gen = torch.Generator().manual_seed(0)
    x = (
        torch.randn(rows, in_features, generator=gen)
        * torch.randn(rows, in_features, generator=gen).exp()
    )
    x = x.to(weight.dtype).to(weight.device)
    with torch.inference_mode():
        whole = F.linear(x, weight)
        if not torch.equal(F.linear(torch.cat([x, x]), weight)[:rows], whole):
            return ROW_COUNTS[-1]
        agrees = [torch.equal(_chunked(x, weight, m), whole) for m in ROW_COUNTS]
    for i, m in enumerate(ROW_COUNTS):
        if all(agrees[i:]):
            return m
    return ROW_COUNTS[-1]


def _chunked(x: torch.Tensor, weight: torch.Tensor, m: int) -> torch.Tensor:
    return torch.cat([F.linear(x[i : i + m], weight) for i in range(0, x.shape[0], m)])


@functools.lru_cache(maxsize=None)
def shifted_keys_stay_exact(
    dtype: torch.dtype, kv_heads: int, group: int, head_dim: int, trials: int = 24
) -> bool:
    """Whether ``attend_rows`` gives a draft node in column 1 (its keys ``LANE_STRIDE`` slots
    right of their positions) the numbers of the plain step at its position. The values make
    the sum's order visible: equal scores (zero queries) over values of +-2**30 and small ones,
    so that grouping keys differently changes which small values survive (on a CPU that sums
    each lane in order, shifted keys give the same sums; on one that groups keys, most rows
    differ). ~0.1 s, once per process and shape."""
    gen = torch.Generator().manual_seed(0)
    depth, heads = 4, (1, kv_heads)
    for _ in range(trials):
        prefix = int(torch.randint(40, KEY_BLOCK - LANE_STRIDE - depth - 2, (1,), generator=gen))
        count = prefix + 1 + depth  # keys in plain order: prefix + root, then the chain
        keys = torch.randn(heads + (count, head_dim), generator=gen).to(dtype)
        values = _order_revealing_values(heads + (count, head_dim), gen).to(dtype)
        rows = torch.zeros(depth, kv_heads, group, head_dim, dtype=dtype)
        slots = list(range(prefix + 1)) + [prefix + LANE_STRIDE + j for j in range(1, depth + 1)]
        tree = attend_rows(rows, *_laid_out(keys, values, slots, gen), _visible(depth, slots))
        for j in range(depth):
            seen = prefix + 2 + j
            contiguous = list(range(seen))
            plain = attend_rows(
                rows[j : j + 1],
                *_laid_out(keys[:, :, :seen], values[:, :, :seen], contiguous, gen),
                _visible(1, contiguous),
            )
            if not torch.equal(plain[0], tree[j]):
                return False
    return True


def _order_revealing_values(shape: tuple, gen: torch.Generator) -> torch.Tensor:
    sign = torch.randint(0, 2, shape, generator=gen) * 2.0 - 1
    big = torch.randint(0, 2, shape, generator=gen).bool()
    return torch.where(
        big, sign * 2.0**30, sign * 2.0 ** torch.randint(-4, 4, shape, generator=gen)
    )


def _laid_out(
    keys: torch.Tensor, values: torch.Tensor, slots: list[int], gen: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """K and V [1, H, span, D] with the given keys at ``slots`` and garbage elsewhere."""
    shape = keys.shape[:2] + (_span(slots), keys.shape[3])
    k = torch.randn(shape, generator=gen).to(keys.dtype)
    v = torch.randn(shape, generator=gen).to(keys.dtype)
    k[:, :, slots], v[:, :, slots] = keys, values
    return k, v


def _visible(rows: int, slots: list[int]) -> torch.Tensor:
    """Row j of the last ``rows`` slots sees every slot before it and itself."""
    mask = torch.zeros(rows, _span(slots), dtype=torch.bool)
    for j in range(rows):
        mask[j, slots[: len(slots) - rows + j + 1]] = True
    return mask


def _span(slots: list[int]) -> int:
    return aligned(slots[-1] + 1)


class PaddedLinear(nn.Linear):
    """``nn.Linear`` that runs passes of fewer rows than ``min_exact_rows`` as padded ones."""

    weight, bias = parameter(), parameter()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.numel() // self.in_features
        need = self._need()
        if rows >= need:
            return F.linear(x, self.weight, self.bias)
        flat = x.reshape(rows, self.in_features)
        padded = torch.cat([flat, flat.new_zeros(need - rows, self.in_features)])
        return F.linear(padded, self.weight, self.bias)[:rows].reshape(
            *x.shape[:-1], self.out_features
        )

    def _need(self) -> int:
        """``min_exact_rows`` of this weight at the current thread count, remembered per layer."""
        threads = torch.get_num_threads()
        known = self.__dict__.setdefault("_needs", {})
        if threads not in known:
            known[threads] = min_exact_rows(self.weight)
        return known[threads]


class ExactRowsTransformer(Transformer):
    """A half-precision CPU target whose passes give every row its single-token step's numbers:
    masks widened to an aligned span of keys (``aligned_mask``), draft-tree rows in lane-aligned
    columns (``layout``, set by ``make_rows_exact`` from this CPU's probe)."""

    def pass_mask(self, mask, start, t, device):
        return aligned_mask(mask, start, t, device)


def make_rows_exact(model: Transformer) -> Transformer:
    """In a half-precision target, in place: every plain ``nn.Linear`` becomes a
    ``PaddedLinear`` (weights shared, tied ones included), attention after the prefix runs
    row by row (``attend_rows``), and draft trees are laid out in lane-aligned columns
    (an ``ExactRowsTransformer`` with its ``layout``: attention kernels sum each vector lane
    separately, so a key must sit in the lane its position gives it in plain decoding). fp32
    models stay as they are: their last-bit differences do not flip a greedy choice in
    practice (the fp32 exactness tests), bf16 rounding does. CPU only: GPU kernels are not
    checked yet."""
    if model.dtype not in HALF or model.embed_tokens.weight.device.type != "cpu":
        return model
    for module in model.modules():
        if type(module) is nn.Linear:
            module.__class__ = PaddedLinear
        elif type(module) is Attention:
            module.__class__ = RowwiseAttention
    cfg = model.config
    shifted_ok = shifted_keys_stay_exact(
        model.dtype,
        cfg.num_key_value_heads,
        cfg.num_attention_heads // cfg.num_key_value_heads,
        cfg.head_dim,
    )
    if not isinstance(model, ExactRowsTransformer):
        if type(model) is not Transformer:  # another mode's class: its passes would not align
            raise TypeError(f"cannot make a {type(model).__name__} exact")
        model.__class__ = ExactRowsTransformer
    model.layout = TreeLayout(LANE_STRIDE, max_columns=None if shifted_ok else 1)
    return model
