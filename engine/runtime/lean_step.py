"""The single-token forward pass of a mixed-precision target, without module dispatch.

At one token per pass the matmuls are small and about a quarter of a step's
time went to Python module calls and per-op dispatch. ``LeanStep`` runs the
same operations as ``Transformer.forward`` with ``MixedLinear`` layers (bf16
weight copies, fp32 everywhere else) from flat lists of tensors: q and k are
rotated together, the residual stream stays one tensor, and nothing else is
built per layer. Its logits equal the module path's bit for bit (tested).

Only for plain decoding in mixed precision (``engine.runtime.mixed_precision``): the
multi-token passes still go through the modules in fp32. ``LeanInt4Step`` is the
same for an int4 target in exact mode (``engine.runtime.exact_rows``): the
module path's operations for one token (kernels called on the packed weights,
row-by-row attention over an aligned span, taps too), so its numbers are those
of a verification row, bit for bit (tested), and speculation stays lossless.
Not here: Qwen3's q/k norms (such models keep the module path; ``supports``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .kv_cache import CacheFullError, aligned
from .model import ForwardOutput


@dataclass(frozen=True)
class _LayerWeights:
    input_norm: torch.Tensor
    qkv: torch.Tensor            # bf16
    qkv_bias: torch.Tensor | None
    out: torch.Tensor            # bf16
    post_norm: torch.Tensor
    gate_up: torch.Tensor        # bf16
    down: torch.Tensor           # bf16


class LeanStep:
    """``step(token, cache)`` -> fp32 logits [1, 1, V] of one token written at slot ``cache.length``
    (no taps: mixed precision decodes plainly)."""

    taps = False

    def __init__(self, model) -> None:
        cfg = model.config
        self.heads, self.kv_heads, self.head_dim = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
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

    @torch.inference_mode()
    def __call__(self, token: torch.Tensor, cache, taps: bool = False) -> ForwardOutput:
        return ForwardOutput(logits=self.logits(token, cache), taps=None)

    def logits(self, token: torch.Tensor, cache) -> torch.Tensor:
        pos = cache.length
        end = pos + 1
        cos, sin = self.cos[pos], self.signed_sin[pos]
        h, hkv, d = self.heads, self.kv_heads, self.head_dim
        x = self.embeddings[token.reshape(1)].view(1, 1, -1)      # a copy: updated in place below
        for i, w in enumerate(self.layers):
            qkv = _bf16_linear(F.rms_norm(x, self.hidden, w.input_norm, self.eps), w.qkv, w.qkv_bias)
            qk = qkv[..., : (h + hkv) * d].view(h + hkv, d)
            qk = qk * cos + qk.roll(self.half, -1) * sin
            cache.k[i, 0, :, pos] = qk[h:]
            cache.v[i, 0, :, pos] = qkv[0, 0, (h + hkv) * d:].view(hkv, d)
            attended = F.scaled_dot_product_attention(
                qk[:h].view(1, hkv, h // hkv, d), cache.k[i, :, :, :end], cache.v[i, :, :, :end])
            x.add_(_bf16_matmul(attended.view(1, 1, -1), w.out))     # bf16 -> fp32 is exact
            gate_up = _bf16_linear(F.rms_norm(x, self.hidden, w.post_norm, self.eps), w.gate_up)
            x.add_(_bf16_matmul(F.silu(gate_up[..., : self.intermediate]) * gate_up[..., self.intermediate:], w.down))
        return _bf16_linear(F.rms_norm(x, self.hidden, self.final_norm, self.eps), self.head, self.head_bias)


def _bf16_matmul(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """x @ weight.T in bf16 (the result stays bf16)."""
    return F.linear(x.to(torch.bfloat16), weight)


def _bf16_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """What ``MixedLinear`` computes for one row."""
    out = _bf16_matmul(x, weight).to(x.dtype)
    return out if bias is None else out + bias


def _layer_weights(block) -> _LayerWeights:
    attn, mlp = block.self_attn, block.mlp
    return _LayerWeights(block.input_layernorm.weight, attn.qkv_proj.step_weight, attn.qkv_proj.bias,
                         attn.o_proj.step_weight, block.post_attention_layernorm.weight,
                         mlp.gate_up_proj.step_weight, mlp.down_proj.step_weight)


class LeanInt4Step:
    """``step(token, cache, taps)`` -> ``ForwardOutput`` of one token of an int4 target in exact
    mode, written at slot ``cache.length``: what ``Transformer.forward`` computes, bit for bit."""

    taps = True

    def __init__(self, model) -> None:
        cfg = model.config
        self.heads, self.kv_heads, self.head_dim = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
        self.eps, self.intermediate, self.hidden = cfg.rms_norm_eps, cfg.intermediate_size, (cfg.hidden_size,)
        self.embeddings, self.final_norm, self.head = model.embed_tokens.weight, model.norm.weight.float(), model.lm_head
        self.tap_layers = cfg.tap_layers              # may repeat a layer (small models): kept as is
        self.layers = [(b.input_layernorm.weight.float(), b.self_attn.qkv_proj, b.self_attn.o_proj,
                        b.post_attention_layernorm.weight.float(), b.mlp.gate_up_proj, b.mlp.down_proj)
                       for b in model.layers]
        half = cfg.head_dim // 2
        self.half, self.cos = half, model.rope.cos.to(torch.bfloat16)
        self.signed_sin = torch.cat([-model.rope.sin[:, :half], model.rope.sin[:, half:]], dim=-1).to(torch.bfloat16)

    @staticmethod
    def supports(model) -> bool:
        return model.precision == "int4" and not model.config.qk_norm and model.lane_stride > 0 \
            and all(block.self_attn.rowwise for block in model.layers)

    def _norm(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x.float(), self.hidden, weight, self.eps).to(torch.bfloat16)

    @torch.inference_mode()
    def __call__(self, token: torch.Tensor, cache, taps: bool = False) -> ForwardOutput:
        pos = cache.length
        if pos + 1 > cache.capacity:
            raise CacheFullError(f"KV cache holds {cache.capacity} tokens; {pos + 1} needed")
        span = aligned(pos + 1)
        mask = torch.zeros(1, 1, 1, span, dtype=torch.bool)
        mask[..., : pos + 1] = True
        cos, sin = self.cos[pos], self.signed_sin[pos]
        h, hkv, d = self.heads, self.kv_heads, self.head_dim
        x = self.embeddings[token.reshape(1)]                                   # [1, hidden] bf16
        tapped, threads = [], torch.get_num_threads()
        for i, (input_norm, qkv_proj, o_proj, post_norm, gate_up_proj, down_proj) in enumerate(self.layers):
            if taps:
                tapped.extend(x for tap in self.tap_layers if tap == i)
            qkv = _with_bias(qkv_proj.rows(self._norm(x, input_norm)), qkv_proj.bias)
            qk = qkv[:, : (h + hkv) * d].view(h + hkv, d)
            qk = qk * cos + qk.roll(self.half, -1) * sin
            cache.k[i, 0, :, pos] = qk[h:]
            cache.v[i, 0, :, pos] = qkv[0, (h + hkv) * d:].view(hkv, d)
            torch.set_num_threads(1)          # as attend_rowwise: one thread, so a row sums as alone
            try:
                attended = F.scaled_dot_product_attention(qk[:h].view(1, hkv, h // hkv, d), cache.k[i, :, :, :span],
                                                          cache.v[i, :, :, :span], attn_mask=mask)
            finally:
                torch.set_num_threads(threads)
            x = x + o_proj.rows(attended.view(1, h * d))
            gate_up = gate_up_proj.rows(self._norm(x, post_norm))
            x = x + down_proj.rows(F.silu(gate_up[:, : self.intermediate]) * gate_up[:, self.intermediate:])
        logits = self.head(self._norm(x, self.final_norm).view(1, 1, -1))
        return ForwardOutput(logits=logits, taps=torch.cat(tapped, dim=-1).view(1, 1, -1) if taps else None)


def _with_bias(out: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    return out if bias is None else out + bias
