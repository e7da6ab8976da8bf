"""Building blocks shared by the target runtime and the drafter.

RMSNorm, rotary position embeddings, the SwiGLU MLP and the SDPA call. No
model structure lives here; see ``engine.runtime.model`` and ``engine.speculative.drafter``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .registered import parameter, submodule


class RMSNorm(nn.Module):
    weight = parameter()

    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = self.weight
        if x.dtype == torch.float32:
            return F.rms_norm(x, weight.shape, weight, self.eps)
        # half precision: normalise in fp32 like the reference, cast back
        return F.rms_norm(x.float(), weight.shape, weight.float(), self.eps).to(x.dtype)


class RotaryEmbedding(nn.Module):
    """cos/sin tables [max_positions, head_dim] indexed by absolute position; ``signed_sin``
    is sin with its first half negated (``heads_rotation``, ``rotate``)."""

    def __init__(self, head_dim: int, theta: float, max_positions: int) -> None:
        super().__init__()
        # built on the CPU even inside a meta-device context (meta arange imports torch._dynamo)
        inv_freq = 1.0 / (
            theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64, device="cpu") / head_dim)
        )
        angles = torch.outer(
            torch.arange(max_positions, dtype=torch.float64, device="cpu"), inv_freq
        )
        angles = torch.cat([angles, angles], dim=-1)
        self.register_buffer("cos", angles.cos().float(), persistent=False)
        self.register_buffer("sin", angles.sin().float(), persistent=False)
        half = head_dim // 2
        signed = torch.cat([-self.sin[:, :half], self.sin[:, half:]], dim=-1)
        self.register_buffer("signed_sin", signed, persistent=False)

    def forward(
        self, positions: torch.Tensor, dtype: torch.dtype
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """positions [T] or [B, T] -> cos, sin broadcastable to [B, H, T, D]."""
        cos, sin = self.cos[positions].to(dtype), self.sin[positions].to(dtype)
        if positions.dim() == 1:
            return cos[None, None], sin[None, None]
        return cos[:, None], sin[:, None]

    def heads_rotation(
        self, positions: torch.Tensor, dtype: torch.dtype
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """positions [T] or [B, T] -> cos, signed sin [T, 1, D] or [B, T, 1, D]: broadcastable to
        q and k heads [B, T, H, D] (``rotate``)."""
        cos, sin = self.cos[positions].to(dtype), self.signed_sin[positions].to(dtype)
        return cos.unsqueeze(-2), sin.unsqueeze(-2)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x [B, H, T, D] rotated by the angles of its positions."""
    return x * cos + rotate_half(x) * sin


def rotate(x: torch.Tensor, cos: torch.Tensor, signed_sin: torch.Tensor) -> torch.Tensor:
    """``apply_rotary`` bit for bit, for x [..., D] of any head layout (``heads_rotation``):
    rotate_half(x) * sin == roll(x, D/2) * signed_sin (negating before or after a product or a
    rounding to a smaller dtype is exact), two ops fewer."""
    return x * cos + x.roll(x.shape[-1] // 2, -1) * signed_sin


class SwiGLU(nn.Module):
    """down(silu(gate(x)) * up(x)) with gate and up fused in one matmul."""

    gate_up_proj, down_proj = submodule(), submodule()

    def __init__(self, hidden: int, intermediate: int, dtype: torch.dtype | None = None) -> None:
        super().__init__()
        self.gate_up_proj = nn.Linear(hidden, 2 * intermediate, bias=False, dtype=dtype)
        self.down_proj = nn.Linear(intermediate, hidden, bias=False, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up_proj.forward(x).chunk(2, dim=-1)  # .forward: no hooks, faster
        return self.down_proj.forward(F.silu(gate) * up)


def attend(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, causal: bool
) -> torch.Tensor:
    """SDPA with grouped KV heads, without copying K/V per query head.

    q [B, H, T, D]; k, v [B, Hkv, S, D]; mask bool [T, S] or [B, 1, T, S] (True = attend).
    The G query heads sharing a KV head are folded into the query length, so
    the cache is read in place: q -> [B, Hkv, G*T, D].
    """
    b, h, t, d = q.shape
    groups = h // k.shape[1]
    if causal and mask is None and t > 1:
        mask = torch.ones(t, k.shape[2], dtype=torch.bool, device=q.device).tril(k.shape[2] - t)
    if groups > 1:
        q = q.reshape(b, k.shape[1], groups * t, d)
        if mask is not None:
            mask = mask.repeat(groups, 1) if mask.dim() == 2 else mask.repeat(1, 1, groups, 1)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return out.reshape(b, h, t, d)


def attend_rows(
    rows: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """``attend`` for one sequence with every query token as its own batch element over the
    shared (expanded, not copied) K/V, on one thread: a token's numbers are then those of a
    single-token pass over the same keys, however many tokens share the pass (the fused
    kernel blocks query rows and splits work across threads, and both change its summation
    order). Query rows [T, Hkv, G, D] (G query heads per KV head) over k, v [1, Hkv, S, D];
    mask bool, T x S elements. -> [T, Hkv, G, D]."""
    t = rows.shape[0]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return F.scaled_dot_product_attention(
            rows,
            k.expand(t, -1, -1, -1),
            v.expand(t, -1, -1, -1),
            attn_mask=mask.reshape(t, 1, 1, -1),
        )
    finally:
        torch.set_num_threads(threads)
