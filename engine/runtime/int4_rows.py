"""Several sequences in one pass through an int4 target in exact mode, each in its own cache.

Batched decoding of an int4 target (``engine.speculative.batch.RowTargets``) keeps
one KV cache per sequence, laid out as that sequence's own decode lays it out, and
runs each round as one pass: the linear layers over every sequence's tokens at once
(the int4 and int8 kernels compute each row on its own: ``engine.runtime.int4``),
attention per sequence over its own span, row by row as the module path's
``RowwiseAttention`` does (neighbouring one-token sequences over the same span in one
call: the kernel computes batch rows on their own). Each sequence's logits, taps and
cache entries are then bit for bit what ``Transformer.forward`` gives it alone
(tested), so every greedy row equals its single-sequence decode.

Not here: single-sequence passes (``Transformer.forward``: the one forward), Qwen3's
q/k norms (such models batch through the modules; ``Int4Rows.supports``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn.functional as F

from .int4 import WIDE_ROWS
from .kv_cache import CacheFullError, KVCache
from .layers import attend_rows, rotate
from .model import RowwiseAttention, aligned_mask


class Int4Rows:
    """``run_rows``: passes of several sequences after their prefixes (plain steps or
    verification passes of up to ``WIDE_ROWS`` tokens each) through an int4 target in exact
    mode (``supports``), each what ``Transformer.forward`` computes for it alone, bit for bit
    (kernels called on the packed weights)."""

    def __init__(self, model) -> None:
        cfg = model.config
        self.heads, self.kv_heads, self.head_dim = (
            cfg.num_attention_heads,
            cfg.num_key_value_heads,
            cfg.head_dim,
        )
        self.eps, self.intermediate, self.hidden = (
            cfg.rms_norm_eps,
            cfg.intermediate_size,
            (cfg.hidden_size,),
        )
        self.embeddings, self.final_norm, self.head = (
            model.embed_tokens.weight,
            model.norm.weight.float(),
            model.lm_head,
        )
        self.tap_layers = cfg.tap_layers  # may repeat a layer (small models): kept as is
        self.layers = [
            (
                b.input_layernorm.weight.float(),
                b.self_attn.qkv_proj,
                b.self_attn.o_proj,
                b.post_attention_layernorm.weight.float(),
                b.mlp.gate_up_proj,
                b.mlp.down_proj,
            )
            for b in model.layers
        ]
        self.cos, self.signed_sin = model.rope.cos, model.rope.signed_sin

    @staticmethod
    def supports(model) -> bool:
        """An int4 model in exact mode (``engine.runtime.exact_rows``) without q/k norms."""
        return (
            model.precision == "int4"
            and not model.config.qk_norm
            and model.layout.lanes
            and all(isinstance(block.self_attn, RowwiseAttention) for block in model.layers)
        )

    def _norm(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x.float(), self.hidden, weight, self.eps).to(torch.bfloat16)

    @torch.inference_mode()
    def run_rows(
        self,
        parts: Sequence["RowPass"],
        *,
        taps: bool = False,
        logits_at=None,
        batch: KVCache | None = None,
    ) -> list[tuple[torch.Tensor | None, torch.Tensor | None]]:
        """One pass over several sequences, each after its prefix in its own cache (batch 1): the
        linear layers run over every sequence's tokens at once (the kernels compute rows on their
        own), attention per sequence over its own span; (logits [T, V], taps [T, 3H] or None) per
        part, each what a pass of that sequence alone gives, bit for bit. ``batch``: the cache
        whose row j is part j's cache (``KVCache.rows``): neighbouring one-token parts over the
        same span then share one attention call (the kernel computes batch rows on their own)."""
        layouts = [_layout(part) for part in parts]
        counts = [part.tokens.numel() for part in parts]
        bounds = [sum(counts[:j]) for j in range(len(counts) + 1)]
        positions = torch.cat([positions for _, positions, _ in layouts])
        cos = self.cos[positions].to(torch.bfloat16)[:, None]  # [N, 1, D]
        sin = self.signed_sin[positions].to(torch.bfloat16)[:, None]
        h, hkv, d = self.heads, self.kv_heads, self.head_dim
        x = self.embeddings[torch.cat([part.tokens for part in parts])]  # [N, hidden] bf16
        n = x.shape[0]
        groups = _groups(layouts, counts, batch)
        tapped = []
        for i, (input_norm, qkv_proj, o_proj, post_norm, gate_up_proj, down_proj) in enumerate(
            self.layers
        ):
            if taps:
                tapped.extend(x for tap in self.tap_layers if tap == i)
            qkv = _with_bias(_kernel_rows(qkv_proj, self._norm(x, input_norm)), qkv_proj.bias)
            qk = qkv[:, : (h + hkv) * d].view(n, h + hkv, d)
            qk = rotate(qk, cos, sin)
            values = qkv[:, (h + hkv) * d :].view(n, hkv, d)
            for part, (where, _, _), lo, hi in zip(parts, layouts, bounds, bounds[1:]):
                part.cache.k[i, 0, :, where] = qk[lo:hi, h:].transpose(0, 1)
                part.cache.v[i, 0, :, where] = values[lo:hi].transpose(0, 1)
            queries = qk[:, :h].reshape(n, hkv, h // hkv, d)
            attended = _cat(
                [
                    _attend_group(i, parts, layouts, bounds, queries, group, batch)
                    for group in groups
                ]
            ).reshape(n, h * d)
            x = x + _with_bias(_kernel_rows(o_proj, attended), o_proj.bias)
            gate_up = _with_bias(
                _kernel_rows(gate_up_proj, self._norm(x, post_norm)), gate_up_proj.bias
            )
            x = x + _with_bias(
                _kernel_rows(
                    down_proj,
                    F.silu(gate_up[:, : self.intermediate]) * gate_up[:, self.intermediate :],
                ),
                down_proj.bias,
            )
        features = torch.cat(tapped, dim=-1) if taps else None
        hidden = [
            x[lo:hi] if logits_at is None else x[lo:hi][logits_at]
            for lo, hi in zip(bounds, bounds[1:])
        ]
        sizes = [len(rows) for rows in hidden]
        logits = (
            _with_bias(
                _kernel_rows(self.head, self._norm(_cat(hidden), self.final_norm)), self.head.bias
            )
            if sum(sizes)
            else None
        )  # one pass for every part: the head is the largest matrix
        out = []
        for j, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
            mine = logits[sum(sizes[:j]) : sum(sizes[: j + 1])] if sizes[j] else None
            out.append((mine, None if features is None else features[lo:hi]))
        return out


@dataclass(frozen=True)
class RowPass:
    """One sequence's share of ``Int4Rows.run_rows``: its new tokens [T] for its own cache
    (batch 1, after a prefix), with the positions [T], mask [T, S] and slots [T] a pass of it
    alone would get (defaults: consecutive positions and slots, causal over the prefix)."""

    tokens: torch.Tensor
    cache: KVCache
    positions: torch.Tensor | None = None
    mask: torch.Tensor | None = None
    slots: torch.Tensor | None = None


def _layout(part: RowPass) -> tuple[slice | torch.Tensor, torch.Tensor, torch.Tensor]:
    """Where a part's keys go, its positions and its attention mask widened to an aligned span."""
    cache, t = part.cache, part.tokens.numel()
    start, device = cache.length, part.tokens.device
    end = start + t if part.slots is None else int(part.slots.max()) + 1
    if end > cache.capacity:
        raise CacheFullError(f"KV cache holds {cache.capacity} tokens; {end} needed")
    where = slice(start, end) if part.slots is None else part.slots
    positions = (
        torch.arange(start, start + t, device=device) if part.positions is None else part.positions
    )
    return where, positions, aligned_mask(part.mask, start, t, device)


def _cat(pieces: list[torch.Tensor]) -> torch.Tensor:
    """``torch.cat`` that does not copy a lone piece (a single sequence's pass)."""
    return pieces[0] if len(pieces) == 1 else torch.cat(pieces)


def _groups(layouts, counts: list[int], batch: KVCache | None) -> list[range]:
    """Runs of neighbouring parts that one attention call can take: one token each over the
    same span, rows of ``batch``; every other part alone."""
    out: list[range] = []
    for j, count in enumerate(counts):
        span = layouts[j][2].shape[-1]
        last = out[-1] if out else None
        if (
            batch is not None
            and count == 1
            and last is not None
            and counts[last[0]] == 1
            and layouts[last[0]][2].shape[-1] == span
        ):
            out[-1] = range(last.start, j + 1)
        else:
            out.append(range(j, j + 1))
    return out


def _attend_group(
    layer: int,
    parts,
    layouts,
    bounds: list[int],
    queries: torch.Tensor,
    group: range,
    batch: KVCache | None,
) -> torch.Tensor:
    """Attention of the parts in ``group`` (``_groups``) over their own keys:
    [tokens, Hkv, G, D]."""
    rows = queries[bounds[group.start] : bounds[group.stop]]
    span = layouts[group.start][2].shape[-1]
    if len(group) == 1:  # as the modules' RowwiseAttention
        cache = parts[group.start].cache
        return attend_rows(
            rows, cache.k[layer, :, :, :span], cache.v[layer, :, :, :span], layouts[group.start][2]
        )
    mask = torch.cat([layouts[j][2] for j in group]).reshape(len(group), 1, 1, span)
    return F.scaled_dot_product_attention(
        rows,
        batch.k[layer, group.start : group.stop, :, :span],
        batch.v[layer, group.start : group.stop, :, :span],
        attn_mask=mask,
    )


def _kernel_rows(layer, x: torch.Tensor) -> torch.Tensor:
    """``layer.rows`` (the int4 or int8 kernel, no bias) over [N, in], at most ``WIDE_ROWS`` rows
    per call (passes of more rows would take the layer's bf16 copy, whose rows depend on the
    pass)."""
    if x.shape[0] <= WIDE_ROWS:
        return layer.rows(x)
    return torch.cat([layer.rows(x[i : i + WIDE_ROWS]) for i in range(0, x.shape[0], WIDE_ROWS)])


def _with_bias(out: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    return out if bias is None else out + bias
