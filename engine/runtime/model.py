"""The target runtime: a lean Llama-family transformer (Llama, Mistral, Qwen2, Qwen3).

Only the network: embeddings, decoder blocks, final norm and head, reading
and writing an external ``KVCache``. One forward pass serves prefill, single
token decoding and tree verification (explicit boolean mask, positions =
prefix length + depth). It can return the EAGLE-3 hidden-state taps and
computes logits only at the rows asked for. ``Transformer.forward`` is the one
forward of every precision (fp32, bf16, int4, int8, mixed): runtime modes are
other classes swapped in at load, never flags read per pass (linear layers:
``engine.runtime.int4``, ``quantize``, ``mixed_precision``, ``exact_rows``;
attention: ``RowwiseAttention``, ``KernelAttention`` below; CUDA graphs:
``engine.runtime.cuda_graphs.GraphedTransformer``; mixed precision's single-token
step, still faster flat: ``engine.runtime.mixed_step.LeanTransformer``). ``Transformer.layout`` says
where verification passes put their rows (``engine.runtime.layout``): contiguous here,
in lanes in exact half precision (``engine.runtime.exact_rows.ExactRowsTransformer``).

It is lean because a single-token step on a CPU is mostly Python and per-op
dispatch around small matmuls: the hidden stream stays 2-D ([B*T, hidden], what
the linear layers take), q and k are rotated together (``layers.rotate``) and
stay in the layout the qkv projection gives them, submodules are called through
``.forward`` (no hook machinery) and read through ``registered`` descriptors.
Residual adds are not in place: training runs the blocks under autograd.

Not here: loading files (``engine.weights.loading``), decoding loops, sampling,
batches of sequences each in its own cache (``engine.runtime.int4_rows``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from .config import ModelConfig
from .kv_cache import KVCache, aligned
from .layers import RMSNorm, RotaryEmbedding, SwiGLU, attend, attend_rows, rotate
from .layout import TreeLayout
from .registered import submodule


@dataclass
class ForwardOutput:
    logits: torch.Tensor | None  # [B, n, V] at the requested rows
    taps: torch.Tensor | None  # [B, T, 3H]: inputs of the three tap layers, low|mid|high


class Attention(nn.Module):
    qkv_proj, o_proj, q_norm, k_norm = submodule(), submodule(), submodule(), submodule()

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
        """Attention of x's tokens [B*T, hidden] (written at slots start.., or at ``slots``) over
        the cache -> [B*T, hidden]; keys span ``mask``'s width. ``rope``: cos and signed sin
        [B or 1, T, 1, D] (``RotaryEmbedding.heads_rotation``), which give T."""
        t = rope[0].shape[-3]
        b = x.shape[0] // t
        h, hkv, d = self.heads, self.kv_heads, self.head_dim
        # .forward: no hook machinery (a step makes ~250 calls); every head of q, k, v in one view
        heads = self.qkv_proj.forward(x).view(b, t, h + 2 * hkv, d)
        qk, v = heads[:, :, : h + hkv], heads[:, :, h + hkv :]  # q and k heads, rotated together
        if self.q_norm is not None:
            qk = torch.cat(
                [self.q_norm.forward(qk[:, :, :h]), self.k_norm.forward(qk[:, :, h:])], dim=2
            )
        qk = rotate(qk, *rope)  # [B, T, H + Hkv, D]
        span = None if mask is None else mask.shape[-1]
        k_all, v_all = cache.write(  # [B, Hkv, span, D]
            layer, start, qk[:, :, h:].transpose(1, 2), v.transpose(1, 2), span, slots
        )
        return self.o_proj.forward(self.attend(qk[:, :, :h], k_all, v_all, mask, start))

    def attend(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        mask: torch.Tensor | None,
        start: int,
    ) -> torch.Tensor:
        """q [B, T, H, D] over k, v [B, Hkv, S, D] (causal in a prompt's first pass)
        -> [B*T, H*D]."""
        b, t, h, d = q.shape
        if t == 1 and mask is None:  # a plain step: a KV head's G query heads are its G rows
            out = F.scaled_dot_product_attention(q.view(b, k.shape[1], h // k.shape[1], d), k, v)
            return out.reshape(b, h * d)
        out = attend(q.transpose(1, 2), k, v, mask, causal=(start == 0 and t > 1))
        return out.transpose(1, 2).reshape(b * t, -1)


class RowwiseAttention(Attention):
    """Attention whose passes after the prefix at batch 1 run each token as its own row
    (``attend_rows``): a row's numbers are its single-token step's
    (``engine.runtime.exact_rows``)."""

    def attend(self, q, k, v, mask, start):
        _, t, h, d = q.shape
        if start > 0 and q.shape[0] == 1:  # exactness is promised at batch 1
            rows = q[0].view(t, k.shape[1], h // k.shape[1], d)  # [T, Hkv, G, D]
            return attend_rows(rows, k, v, mask).reshape(t, h * d)
        return super().attend(q, k, v, mask, start)


class KernelAttention(Attention):
    """Attention whose passes after the prefix at batch 1 go through ``kernel(q, k, v, mask)``
    (q [1, H, T, D], mask bool [T, S]; ``engine.runtime.tree_attention``)."""

    kernel: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]

    def attend(self, q, k, v, mask, start):
        t = q.shape[1]
        if start > 0 and q.shape[0] == 1 and (mask is None or mask.dim() == 2):
            every_key = mask if mask is not None else q.new_ones(t, k.shape[2], dtype=torch.bool)
            out = self.kernel(q.transpose(1, 2), k, v, every_key)  # [1, H, T, D]
            return out.transpose(1, 2).reshape(t, -1)
        return super().attend(q, k, v, mask, start)


def use_attention_kernel(model: "Transformer", kernel: Callable) -> None:
    """Every attention layer of ``model`` a ``KernelAttention`` running ``kernel``, in place."""
    for block in model.layers:
        block.self_attn.__class__ = KernelAttention
        block.self_attn.kernel = kernel


class Block(nn.Module):
    input_layernorm, self_attn = submodule(), submodule()
    post_attention_layernorm, mlp = submodule(), submodule()

    def __init__(self, cfg: ModelConfig, dtype: torch.dtype) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.self_attn = Attention(cfg, dtype)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.mlp = SwiGLU(cfg.hidden_size, cfg.intermediate_size, dtype)

    def forward(self, x, rope, cache, layer, start, mask, slots=None):
        """x [B*T, hidden] through attention and the MLP, each with its residual (not in place:
        training runs blocks under autograd, ``engine.training.sft``)."""
        attended = self.self_attn.forward(
            self.input_layernorm.forward(x), rope, cache, layer, start, mask, slots
        )
        x = x + attended
        return x + self.mlp.forward(self.post_attention_layernorm.forward(x))


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
    # contiguous tree rows; engine.runtime.exact_rows.ExactRowsTransformer lays them in lanes
    layout = TreeLayout()
    embed_tokens, layers, norm, lm_head, rope = (submodule() for _ in range(5))

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
        or [B, 1, T, length+T], True = may attend (default: causal; ``pass_mask``, which exact
        half precision widens to an aligned span of keys); logits_at: rows of T to
        score (default all; an empty slice skips the head); slots: where the tokens go, [T]
        distinct and from ``cache.length`` on (default: contiguous; the mask then spans at
        least to the last).
        """
        start, t = cache.length, tokens.shape[1]
        if positions is None:
            positions = torch.arange(start, start + t, device=tokens.device)
        mask = self.pass_mask(mask, start, t, tokens.device)
        rope = self.rope.heads_rotation(positions, self.dtype)
        b = tokens.shape[0]
        # the hidden stream stays 2-D, [B*T, hidden]: the linear layers take it as it is
        x = self.embed_tokens.forward(tokens.reshape(-1))
        tap_ids, tapped = self.config.tap_layers, []
        for i, block in enumerate(self.layers):
            if taps:  # a layer may be tapped twice (small models): kept as is
                tapped.extend(x for tap in tap_ids if tap == i)
            x = block.forward(x, rope, cache, i, start, mask, slots)
        x = x.view(b, t, -1)
        return ForwardOutput(
            logits=self.logits(x if logits_at is None else x[:, logits_at]),
            taps=torch.cat(tapped, dim=-1).view(b, t, -1) if taps else None,
        )

    def pass_mask(
        self, mask: torch.Tensor | None, start: int, t: int, device: torch.device
    ) -> torch.Tensor | None:
        """The mask a pass of ``t`` tokens after ``start`` runs with: the caller's, or causal over
        the prefix for several tokens after one (a prompt's first pass is causal without one)."""
        if mask is None and start > 0 and t > 1:
            return prefix_causal_mask(start, t, device)
        return mask

    def logits(self, hidden: torch.Tensor) -> torch.Tensor | None:
        if hidden.shape[1] == 0:
            return None
        return self.lm_head.forward(self.norm.forward(hidden))
