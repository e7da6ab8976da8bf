"""Forward passes without module dispatch: the mixed-precision single-token step, the int4 pass.

At one token per pass the matmuls are small and about a quarter of a step's
time went to Python module calls and per-op dispatch. ``LeanStep`` runs the
same operations as ``Transformer.forward`` with ``MixedLinear`` layers (bf16
weight copies, fp32 everywhere else) from flat lists of tensors: q and k are
rotated together, the residual stream stays one tensor, and nothing else is
built per layer. Its logits equal the module path's bit for bit (tested).

Only for plain decoding in mixed precision (``engine.runtime.mixed_precision``): the
multi-token passes still go through the modules in fp32. ``LeanInt4Pass`` is the
same for an int4 target in exact mode (``engine.runtime.exact_rows``), for
every pass after the prompt at batch 1 (plain steps and verification passes):
the module path's operations (kernels called on the packed weights, row-by-row
attention over an aligned span, taps too), bit for bit (tested), so speculation
stays lossless. ``run_rows`` does the same for several sequences in one pass,
each in its own cache (``engine.speculative.batch.RowTargets``): the matmuls
over all their tokens at once, attention per sequence. ``use_lean_pass`` makes a
model a ``LeanTransformer`` holding either: the pass takes the passes it
``handles``, the rest go through the modules.
Not here: Qwen3's q/k norms (such models keep the module path; ``supports``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn.functional as F

from .int4 import WIDE_ROWS
from .kv_cache import CacheFullError, KVCache
from .layers import attend_rows
from .model import ForwardOutput, RowwiseAttention, Transformer, aligned_mask


class LeanTransformer(Transformer):
    """A ``Transformer`` whose passes go through ``lean`` (a ``LeanStep`` or ``LeanInt4Pass``)
    wherever it ``handles`` them, through the modules otherwise."""

    lean: "LeanStep | LeanInt4Pass"

    @torch.inference_mode()
    def forward(self, tokens: torch.Tensor, cache: KVCache, **options) -> ForwardOutput:
        if self.lean.handles(tokens, cache, **options):
            return self.lean(tokens, cache, **options)
        return super().forward(tokens, cache, **options)


def use_lean_pass(model: Transformer, lean: "LeanStep | LeanInt4Pass") -> None:
    """``model`` a ``LeanTransformer`` running ``lean``, in place."""
    model.__class__ = LeanTransformer
    model.lean = lean


def lean_int4_pass(model: Transformer) -> "LeanInt4Pass | None":
    """The int4 lean pass ``model`` runs, if any (batched rows share it: ``run_rows``)."""
    lean = model.lean if isinstance(model, LeanTransformer) else None
    return lean if isinstance(lean, LeanInt4Pass) else None


@dataclass(frozen=True)
class _LayerWeights:
    input_norm: torch.Tensor
    qkv: torch.Tensor  # bf16
    qkv_bias: torch.Tensor | None
    out: torch.Tensor  # bf16
    post_norm: torch.Tensor
    gate_up: torch.Tensor  # bf16
    down: torch.Tensor  # bf16


class LeanStep:
    """``step(token, cache)`` -> ``ForwardOutput`` with the fp32 logits [1, 1, V] of one token
    written at slot ``cache.length`` (no taps: mixed precision decodes plainly)."""

    def __init__(self, model) -> None:
        cfg = model.config
        self.heads, self.kv_heads, self.head_dim = (
            cfg.num_attention_heads,
            cfg.num_key_value_heads,
            cfg.head_dim,
        )
        self.eps, self.intermediate = cfg.rms_norm_eps, cfg.intermediate_size
        self.hidden = (cfg.hidden_size,)
        self.embeddings, self.final_norm = model.embed_tokens.weight, model.norm.weight
        self.head, self.head_bias = model.lm_head.step_weight, model.lm_head.bias
        self.layers = [_layer_weights(block) for block in model.layers]
        # rotate_half(x) * sin == roll(x, half) * signed_sin, bit for bit (negation is exact)
        half = cfg.head_dim // 2
        self.half, self.cos = half, model.rope.cos
        self.signed_sin = torch.cat([-model.rope.sin[:, :half], model.rope.sin[:, half:]], dim=-1)

    @staticmethod
    def supports(model) -> bool:
        return not model.config.qk_norm

    @staticmethod
    def handles(
        tokens: torch.Tensor,
        cache,
        *,
        positions=None,
        mask=None,
        logits_at=None,
        taps=False,
        slots=None,
    ) -> bool:
        """One token of one sequence, nothing but logits asked for."""
        return (
            tokens.numel() == 1
            and cache.k.shape[1] == 1
            and positions is None
            and mask is None
            and logits_at is None
            and not taps
            and slots is None
        )

    @torch.inference_mode()
    def __call__(self, tokens: torch.Tensor, cache, **_) -> ForwardOutput:
        return ForwardOutput(logits=self.logits(tokens, cache), taps=None)

    def logits(self, token: torch.Tensor, cache) -> torch.Tensor:
        pos = cache.length
        end = pos + 1
        cos, sin = self.cos[pos], self.signed_sin[pos]
        h, hkv, d = self.heads, self.kv_heads, self.head_dim
        x = self.embeddings[token.reshape(1)].view(1, 1, -1)  # a copy: updated in place below
        for i, w in enumerate(self.layers):
            qkv = _bf16_linear(
                F.rms_norm(x, self.hidden, w.input_norm, self.eps), w.qkv, w.qkv_bias
            )
            qk = qkv[..., : (h + hkv) * d].view(h + hkv, d)
            qk = qk * cos + qk.roll(self.half, -1) * sin
            cache.k[i, 0, :, pos] = qk[h:]
            cache.v[i, 0, :, pos] = qkv[0, 0, (h + hkv) * d :].view(hkv, d)
            attended = F.scaled_dot_product_attention(
                qk[:h].view(1, hkv, h // hkv, d), cache.k[i, :, :, :end], cache.v[i, :, :, :end]
            )
            x.add_(_bf16_matmul(attended.view(1, 1, -1), w.out))  # bf16 -> fp32 is exact
            gate_up = _bf16_linear(F.rms_norm(x, self.hidden, w.post_norm, self.eps), w.gate_up)
            x.add_(
                _bf16_matmul(
                    F.silu(gate_up[..., : self.intermediate]) * gate_up[..., self.intermediate :],
                    w.down,
                )
            )
        return _bf16_linear(
            F.rms_norm(x, self.hidden, self.final_norm, self.eps), self.head, self.head_bias
        )


def _bf16_matmul(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """x @ weight.T in bf16 (the result stays bf16)."""
    return F.linear(x.to(torch.bfloat16), weight)


def _bf16_linear(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None
) -> torch.Tensor:
    """What ``MixedLinear`` computes for one row."""
    return _with_bias(_bf16_matmul(x, weight).to(x.dtype), bias)


def _layer_weights(block) -> _LayerWeights:
    attn, mlp = block.self_attn, block.mlp
    return _LayerWeights(
        block.input_layernorm.weight,
        attn.qkv_proj.step_weight,
        attn.qkv_proj.bias,
        attn.o_proj.step_weight,
        block.post_attention_layernorm.weight,
        mlp.gate_up_proj.step_weight,
        mlp.down_proj.step_weight,
    )


class LeanInt4Pass:
    """A pass of one sequence after its prefix (a plain step or a verification pass of up to
    ``WIDE_ROWS`` tokens) through an int4 target in exact mode: what ``Transformer.forward``
    computes, bit for bit, without module dispatch (kernels called on the packed weights)."""

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
        half = cfg.head_dim // 2
        self.half, self.cos = half, model.rope.cos
        self.signed_sin = torch.cat([-model.rope.sin[:, :half], model.rope.sin[:, half:]], dim=-1)

    @staticmethod
    def supports(model) -> bool:
        return (
            model.precision == "int4"
            and not model.config.qk_norm
            and model.layout.lanes
            and all(isinstance(block.self_attn, RowwiseAttention) for block in model.layers)
        )

    @staticmethod
    def handles(tokens: torch.Tensor, cache, *, positions: torch.Tensor | None = None, **_) -> bool:
        """One sequence after its prefix (row-by-row attention), few enough rows for the int4 kernel
        (batched layouts, with per-row positions [B, T], keep the modules, even at B = 1)."""
        return (
            tokens.shape[0] == 1
            and cache.k.shape[1] == 1
            and cache.length > 0
            and tokens.shape[1] <= WIDE_ROWS
            and (positions is None or positions.dim() == 1)
        )

    def _norm(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x.float(), self.hidden, weight, self.eps).to(torch.bfloat16)

    @torch.inference_mode()
    def __call__(
        self,
        tokens: torch.Tensor,
        cache,
        *,
        positions: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        logits_at=None,
        taps: bool = False,
        slots: torch.Tensor | None = None,
    ) -> ForwardOutput:
        ((logits, tapped),) = self.run_rows(
            [RowPass(tokens[0], cache, positions, mask, slots)], taps=taps, logits_at=logits_at
        )
        return ForwardOutput(
            logits=None if logits is None else logits[None],
            taps=None if tapped is None else tapped[None],
        )

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
            qk = qk * cos + qk.roll(self.half, -1) * sin  # rotate_half(x) * sin, bit for bit
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
    """One sequence's share of ``LeanInt4Pass.run_rows``: its new tokens [T] for its own cache
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
    if len(group) == 1:  # as the modules' attend_rowwise
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
