"""The target runtime: a lean Llama-family transformer (Llama, Mistral, Qwen2, Qwen3).

Only the network: embeddings, decoder blocks, final norm and head, reading
and writing an external ``KVCache``. One forward pass serves prefill, single
token decoding and tree verification (explicit boolean mask, positions =
prefix length + depth). It can return the EAGLE-3 hidden-state taps and
computes logits only at the rows asked for. Its forward is the module path and
nothing else: runtime modes are other classes swapped in at load, never flags
read per pass (``RowwiseAttention``, ``KernelAttention`` below; a lean pass,
``engine.runtime.lean_step.LeanTransformer``; CUDA graphs,
``engine.runtime.cuda_graphs.GraphedTransformer``). ``Transformer.layout`` says
where verification passes put their rows (``engine.runtime.layout``).

Not here: loading files (``engine.weights.loading``), decoding loops, sampling.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn

from .config import ModelConfig
from .kv_cache import KVCache, aligned
from .layout import TreeLayout
from .layers import RMSNorm, RotaryEmbedding, SwiGLU, apply_rotary, attend, attend_rowwise


@dataclass
class ForwardOutput:
    logits: torch.Tensor | None  # [B, n, V] at the requested rows
    taps: torch.Tensor | None  # [B, T, 3H]: inputs of the three tap layers, low|mid|high


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig, dtype: torch.dtype) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = (
            cfg.num_attention_heads,
            cfg.num_key_value_heads,
            cfg.head_dim,
        )
        out = (self.heads + 2 * self.kv_heads) * self.head_dim
        self.qkv_proj = nn.Linear(cfg.hidden_size, out, bias=cfg.attention_bias, dtype=dtype)
        self.o_proj = nn.Linear(
            self.heads * self.head_dim, cfg.hidden_size, bias=False, dtype=dtype
        )
        self.q_norm = RMSNorm(self.head_dim, cfg.rms_norm_eps) if cfg.qk_norm else None
        self.k_norm = RMSNorm(self.head_dim, cfg.rms_norm_eps) if cfg.qk_norm else None

    def forward(
        self,
        x: torch.Tensor,
        rope: tuple[torch.Tensor, torch.Tensor],
        cache: KVCache,
        layer: int,
        start: int,
        mask: torch.Tensor | None,
        slots: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Attention of x's tokens (written at slots start.., or at ``slots``) over the cache;
        keys span ``mask``'s width."""
        b, t, _ = x.shape
        q, k, v = self.qkv_proj(x).split(
            [
                self.heads * self.head_dim,
                self.kv_heads * self.head_dim,
                self.kv_heads * self.head_dim,
            ],
            dim=-1,
        )
        q = q.view(b, t, self.heads, self.head_dim).transpose(1, 2)  # [B, H, T, D]
        k = k.view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)  # [B, Hkv, T, D]
        v = v.view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = apply_rotary(q, *rope), apply_rotary(k, *rope)
        span = None if mask is None else mask.shape[-1]
        k_all, v_all = cache.write(layer, start, k, v, span, slots)  # [B, Hkv, span, D]
        out = self.attend(q, k_all, v_all, mask, start)
        return self.o_proj(out.transpose(1, 2).reshape(b, t, -1))

    def attend(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        mask: torch.Tensor | None,
        start: int,
    ) -> torch.Tensor:
        """q [B, H, T, D] over k, v [B, Hkv, S, D] (causal in a prompt's first pass)
        -> [B, H, T, D]."""
        return attend(q, k, v, mask, causal=(start == 0 and q.shape[2] > 1))


class RowwiseAttention(Attention):
    """Attention whose passes after the prefix at batch 1 run each token as its own row
    (``attend_rowwise``): a row's numbers are its single-token step's
    (``engine.runtime.exact_rows``)."""

    def attend(self, q, k, v, mask, start):
        if start > 0 and q.shape[0] == 1:  # exactness is promised at batch 1
            return attend_rowwise(q, k, v, mask)
        return super().attend(q, k, v, mask, start)


class KernelAttention(Attention):
    """Attention whose passes after the prefix at batch 1 go through ``kernel(q, k, v, mask)``
    (mask bool [T, S]; ``engine.runtime.tree_attention``)."""

    kernel: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]

    def attend(self, q, k, v, mask, start):
        if start > 0 and q.shape[0] == 1 and (mask is None or mask.dim() == 2):
            every_key = (
                mask if mask is not None else q.new_ones(q.shape[2], k.shape[2], dtype=torch.bool)
            )
            return self.kernel(q, k, v, every_key)
        return super().attend(q, k, v, mask, start)


def use_attention_kernel(model: "Transformer", kernel: Callable) -> None:
    """Every attention layer of ``model`` a ``KernelAttention`` running ``kernel``, in place."""
    for block in model.layers:
        block.self_attn.__class__ = KernelAttention
        block.self_attn.kernel = kernel


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, dtype: torch.dtype) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.self_attn = Attention(cfg, dtype)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.mlp = SwiGLU(cfg.hidden_size, cfg.intermediate_size, dtype)

    def forward(self, x, rope, cache, layer, start, mask, slots=None):
        x = x + self.self_attn(self.input_layernorm(x), rope, cache, layer, start, mask, slots)
        return x + self.mlp(self.post_attention_layernorm(x))


def aligned_mask(
    mask: torch.Tensor | None, start: int, t: int, device: torch.device
) -> torch.Tensor | None:
    """The mask of a pass after the prefix, widened with masked keys to an aligned span
    (``engine.runtime.kv_cache``: a row then computes what its own single-token step does).
    A prompt's first pass (empty prefix, no mask) stays causal without one."""
    if mask is None:
        if start == 0 and t > 1:
            return None
        mask = prefix_causal_mask(start, t, device)
    extra = aligned(max(start + t, mask.shape[-1])) - mask.shape[-1]
    return torch.cat([mask, mask.new_zeros(*mask.shape[:-1], extra)], dim=-1) if extra > 0 else mask


def prefix_causal_mask(start: int, t: int, device: torch.device) -> torch.Tensor:
    """Bool [T, start+T]: every new token sees the prefix and the new tokens up to itself."""
    mask = torch.ones(t, start + t, dtype=torch.bool, device=device)
    mask[:, start:] = torch.ones(t, t, dtype=torch.bool, device=device).tril()
    return mask


def _embedding_init(cfg: ModelConfig, dtype: torch.dtype) -> torch.Tensor:
    """N(0, 1) embeddings; left empty on the meta device (loading), because torch's meta
    ``normal_`` imports torch._dynamo, which costs seconds at every model load."""
    weight = torch.empty(cfg.vocab_size, cfg.hidden_size, dtype=dtype)
    return weight if weight.is_meta else nn.init.normal_(weight)


class Transformer(nn.Module):
    def __init__(self, cfg: ModelConfig, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.config, self.dtype = cfg, dtype
        self.precision = str(dtype).removeprefix(
            "torch."
        )  # "int4" once quantized (engine.runtime.int4)
        self.embed_tokens = nn.Embedding(
            cfg.vocab_size, cfg.hidden_size, _weight=_embedding_init(cfg, dtype)
        )
        self.layers = nn.ModuleList(Block(cfg, dtype) for _ in range(cfg.num_hidden_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False, dtype=dtype)
        if cfg.tie_word_embeddings:
            self.lm_head.weight = self.embed_tokens.weight
        self.rope = RotaryEmbedding(cfg.head_dim, cfg.rope_theta, cfg.max_position_embeddings)
        self.layout = TreeLayout()  # engine.runtime.exact_rows sets lane-aligned rows

    def new_cache(self, capacity: int | None = None, batch: int = 1) -> KVCache:
        cfg = self.config
        capacity = capacity or cfg.max_position_embeddings
        return KVCache(
            cfg.num_hidden_layers,
            batch,
            cfg.num_key_value_heads,
            cfg.head_dim,
            capacity,
            self.dtype,
            self.embed_tokens.weight.device,
            spans=self.layout.lanes,
        )

    @torch.inference_mode()
    def forward(
        self,
        tokens: torch.Tensor,
        cache: KVCache,
        *,
        positions: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        logits_at: torch.Tensor | slice | None = None,
        taps: bool = False,
        slots: torch.Tensor | None = None,
    ) -> ForwardOutput:
        """Run tokens [B, T] written at cache slots ``cache.length..``; the cache is not committed.

        positions: rope positions [T] (default: slot numbers); mask: bool [T, length+T]
        or [B, 1, T, length+T], True = may attend (default: causal; in exact half precision
        widened to an aligned span of keys, see ``aligned_mask``); logits_at: rows of T to
        score (default all; an empty slice skips the head); slots: where the tokens go, [T]
        distinct and from ``cache.length`` on (default: contiguous; the mask then spans at
        least to the last).
        """
        start, t = cache.length, tokens.shape[1]
        if positions is None:
            positions = torch.arange(start, start + t, device=tokens.device)
        if self.layout.lanes:
            mask = aligned_mask(mask, start, t, tokens.device)
        elif mask is None and start > 0 and t > 1:
            mask = prefix_causal_mask(start, t, tokens.device)
        rope = self.rope(positions, self.dtype)
        x = self.embed_tokens(tokens)
        tap_ids, tapped = self.config.tap_layers, []
        for i, layer in enumerate(self.layers):
            if taps:
                tapped.extend(x for tap in tap_ids if tap == i)
            x = layer(x, rope, cache, i, start, mask, slots)
        return ForwardOutput(
            logits=self.logits(x if logits_at is None else x[:, logits_at]),
            taps=torch.cat(tapped, dim=-1) if taps else None,
        )

    def logits(self, hidden: torch.Tensor) -> torch.Tensor | None:
        if hidden.shape[1] == 0:
            return None
        return self.lm_head(self.norm(hidden))
