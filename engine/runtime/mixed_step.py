"""Mixed precision's single-token step without module dispatch (``LeanStep``).

At one token per pass the matmuls are small and much of a step's time goes to
Python and per-op dispatch. ``LeanStep`` runs the same operations as
``Transformer.forward`` with ``MixedLinear`` layers (bf16 weight copies, fp32
everywhere else) from flat lists of tensors: no module attribute reads, the
residual stream updated in place, the bf16 products of the output and down
projections added to it without a conversion op. Its logits and cache entries
equal the module path's bit for bit (tested). It is kept because the module path,
lean as it is, measured ~3-4% slower at 1 thread and ~6-7% at 2 threads on the
embedded model (the int4 step matched its own lean pass within noise and lost it).

Only for plain decoding in mixed precision (``engine.runtime.mixed_precision``):
one token, no taps, positions, mask or slots; every other pass (the prompt, Qwen3's
q/k norms) goes through the modules. ``use_lean_pass`` makes a model a
``LeanTransformer`` running it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .kv_cache import KVCache
from .model import ForwardOutput, Transformer


class LeanTransformer(Transformer):
    """A ``Transformer`` whose passes go through ``lean`` (a ``LeanStep``) wherever it
    ``handles`` them, through the modules otherwise."""

    lean: "LeanStep"

    @torch.inference_mode()
    def forward(self, tokens: torch.Tensor, cache: KVCache, **options) -> ForwardOutput:
        if self.lean.handles(tokens, cache, **options):
            return self.lean(tokens, cache, **options)
        return super().forward(tokens, cache, **options)


def use_lean_pass(model: Transformer, lean: "LeanStep") -> None:
    """``model`` a ``LeanTransformer`` running ``lean``, in place."""
    model.__class__ = LeanTransformer
    model.lean = lean


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
        self.half = cfg.head_dim // 2
        self.cos, self.signed_sin = model.rope.cos, model.rope.signed_sin  # ``layers.rotate``

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


def _with_bias(out: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    return out if bias is None else out + bias
