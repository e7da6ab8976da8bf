"""The drafter network: EAGLE-3 body with the EAGLE-4 changes.

fuse: fc(cat(norm(low), norm(mid), norm(high))) maps the target's taps
[B, T, 3Ht] to the drafter's hidden [B, T, H] (the per-chunk norms are the
EAGLE-3.1 option). One decoder layer (``midlayer``) takes cat(norm(embed(tok)),
norm(h)) [2H] into attention, keeps h as the residual, and returns the
pre-norm output h, which is both the next draft step's hidden input and,
through ``norm`` + head, the draft logits. EAGLE-4: optional sliding-window
attention and an optional low-rank candidate head. The embedding (and, for the
full vocabulary, the head) is the target's, shared and frozen via ``attach``.

Module and tensor names follow the public EAGLE-3 checkpoint layout.
Not here: files (``engine.speculative.checkpoint``), the draft tree, training.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch
import torch.nn.functional as F
from torch import nn

from ..runtime.config import ModelConfig
from ..runtime.kv_cache import CacheFullError, KVCache
from ..runtime.layers import RMSNorm, RotaryEmbedding, apply_rotary, attend
from ..runtime.model import prefix_causal_mask


class DrafterMismatchError(ValueError):
    """A drafter does not fit the target it is attached to."""


@dataclass(frozen=True)
class DrafterConfig:
    hidden_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int  # target vocabulary
    draft_vocab_size: int  # == vocab_size without a reduced vocabulary
    target_hidden_size: int  # hidden size of the target's taps (3 chunks of it)
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    max_position_embeddings: int = 2048
    window: int | None = None  # sliding window in positions; None = full attention
    chunk_norms: bool = False  # EAGLE-3.1 per-chunk norms before fc
    lowrank_rank: int | None = None  # EAGLE-4 low-rank candidate head
    lowrank_candidates: int = 64  # m: exact logits computed for these many candidates
    target_fingerprint: str | None = None

    def __post_init__(self) -> None:
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError("num_attention_heads must be a multiple of num_key_value_heads")
        if not 0 < self.draft_vocab_size <= self.vocab_size:
            raise ValueError(
                f"draft_vocab_size {self.draft_vocab_size} must be in 1..{self.vocab_size}"
            )
        if self.window is not None and self.window < 1:
            raise ValueError(f"window must be >= 1 or None, not {self.window}")
        if self.lowrank_rank is not None and not 0 < self.lowrank_rank <= min(
            self.hidden_size, self.draft_vocab_size
        ):
            raise ValueError(
                f"lowrank_rank {self.lowrank_rank} must be in "
                f"1..{min(self.hidden_size, self.draft_vocab_size)}"
            )
        if self.lowrank_candidates < 1:
            raise ValueError("lowrank_candidates must be >= 1")

    @classmethod
    def for_target(cls, model_config: ModelConfig, **overrides) -> "DrafterConfig":
        """Default drafter for a target: same width, heads, head_dim, MLP and vocabulary."""
        mc = model_config
        values = dict(
            hidden_size=mc.hidden_size,
            num_attention_heads=mc.num_attention_heads,
            num_key_value_heads=mc.num_key_value_heads,
            head_dim=mc.head_dim,
            intermediate_size=mc.intermediate_size,
            vocab_size=mc.vocab_size,
            draft_vocab_size=mc.vocab_size,
            target_hidden_size=mc.hidden_size,
            rms_norm_eps=mc.rms_norm_eps,
            rope_theta=mc.rope_theta,
            max_position_embeddings=mc.max_position_embeddings,
        )
        unknown = set(overrides) - {f.name for f in fields(cls)}
        if unknown:
            raise TypeError(f"unknown DrafterConfig fields: {sorted(unknown)}")
        values.update(overrides)
        return cls(**values)


class DraftAttention(nn.Module):
    def __init__(self, c: DrafterConfig, dtype: torch.dtype) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = (
            c.num_attention_heads,
            c.num_key_value_heads,
            c.head_dim,
        )
        self.q_proj = nn.Linear(2 * c.hidden_size, self.heads * c.head_dim, bias=False, dtype=dtype)
        self.k_proj = nn.Linear(
            2 * c.hidden_size, self.kv_heads * c.head_dim, bias=False, dtype=dtype
        )
        self.v_proj = nn.Linear(
            2 * c.hidden_size, self.kv_heads * c.head_dim, bias=False, dtype=dtype
        )
        self.o_proj = nn.Linear(self.heads * c.head_dim, c.hidden_size, bias=False, dtype=dtype)

    def forward(self, x, rope, cache: KVCache, start: int, mask, first_key: int) -> torch.Tensor:
        b, t, _ = x.shape  # x [B, T, 2H]
        q = self.q_proj(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)  # [B, Hq, T, D]
        k = (
            self.k_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        )  # [B, Hkv, T, D]
        v = self.v_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = apply_rotary(q, *rope), apply_rotary(k, *rope)
        k_all, v_all = _write_kv(cache, start, k, v)  # [B, Hkv, start+T, D]
        if first_key:  # sliding window: skip leading slots no query may see
            k_all, v_all, mask = (
                k_all[:, :, first_key:],
                v_all[:, :, first_key:],
                mask[..., first_key:],
            )
        out = attend(q, k_all, v_all, mask, causal=(start == 0 and t > 1))
        return self.o_proj(out.transpose(1, 2).reshape(b, t, -1))  # [B, T, H]


def _write_kv(cache: KVCache, start: int, k: torch.Tensor, v: torch.Tensor):
    """cache.write for layer 0; with autograd on, out of place so unrolled steps can backprop."""
    if not (torch.is_grad_enabled() and (k.requires_grad or v.requires_grad)):
        return cache.write(0, start, k, v)
    end = start + k.shape[2]
    if end > cache.capacity:
        raise CacheFullError(f"KV cache holds {cache.capacity} tokens; {end} needed")
    cache.k = cache.k.slice_scatter(k.unsqueeze(0).to(cache.k.dtype), dim=3, start=start, end=end)
    cache.v = cache.v.slice_scatter(v.unsqueeze(0).to(cache.v.dtype), dim=3, start=start, end=end)
    return cache.k[0, :, :, :end], cache.v[0, :, :, :end]


class DraftMLP(nn.Module):
    def __init__(self, hidden: int, intermediate: int, dtype: torch.dtype) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(hidden, intermediate, bias=False, dtype=dtype)
        self.up_proj = nn.Linear(hidden, intermediate, bias=False, dtype=dtype)
        self.down_proj = nn.Linear(intermediate, hidden, bias=False, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DraftLayer(nn.Module):
    def __init__(self, c: DrafterConfig, dtype: torch.dtype) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.hidden_norm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.self_attn = DraftAttention(c, dtype)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.mlp = DraftMLP(c.hidden_size, c.intermediate_size, dtype)

    def forward(self, embeds, hidden, rope, cache, start, mask, first_key):
        x = torch.cat(
            [self.input_layernorm(embeds), self.hidden_norm(hidden)], dim=-1
        )  # [B, T, 2H]
        h = hidden + self.self_attn(x, rope, cache, start, mask, first_key)  # residual = h
        return h + self.mlp(self.post_attention_layernorm(h))


class Drafter(nn.Module):
    def __init__(
        self,
        config: DrafterConfig,
        *,
        own_head: bool | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        """own_head: the drafter stores its lm_head (default: only with a reduced vocabulary)."""
        super().__init__()
        c = self.config = config
        own_head = c.draft_vocab_size < c.vocab_size if own_head is None else own_head
        if not own_head and c.draft_vocab_size != c.vocab_size:
            raise ValueError("a reduced draft vocabulary needs the drafter's own lm_head")
        self.fc = nn.Linear(3 * c.target_hidden_size, c.hidden_size, bias=False, dtype=dtype)
        self.chunk_norms = (
            nn.ModuleList(RMSNorm(c.target_hidden_size, c.rms_norm_eps) for _ in range(3))
            if c.chunk_norms
            else None
        )
        self.midlayer = DraftLayer(c, dtype)
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.rope = RotaryEmbedding(c.head_dim, c.rope_theta, c.max_position_embeddings)
        self.lm_head = (
            nn.Linear(c.hidden_size, c.draft_vocab_size, bias=False, dtype=dtype)
            if own_head
            else None
        )
        if own_head:  # target_id = i + d2t[i]; t2d marks target ids present in the draft vocab
            self.register_buffer("d2t", torch.zeros(c.draft_vocab_size, dtype=torch.long))
            t2d = torch.zeros(c.vocab_size, dtype=torch.bool)
            t2d[: c.draft_vocab_size] = True
            self.register_buffer("t2d", t2d)
        else:
            self.d2t = self.t2d = None
        if c.lowrank_rank is not None:
            r = c.lowrank_rank
            self.lowrank_down = nn.Parameter(
                torch.randn(r, c.hidden_size, dtype=dtype) / c.hidden_size**0.5
            )
            self.lowrank_up = nn.Parameter(torch.randn(c.draft_vocab_size, r, dtype=dtype) / r**0.5)
        else:
            self.lowrank_down = self.lowrank_up = None
        self._shared: tuple[torch.Tensor, torch.Tensor | None] | None = (
            None  # (embed [V, H], head [V, H] | None)
        )

    # ---- target sharing -------------------------------------------------------------------------
    def attach(self, target: nn.Module) -> "Drafter":
        """Share the target's embedding (and, without an own head, its lm_head), frozen.

        Holds detached references, not submodules: they stay out of parameters() and
        state_dict(); re-attach after moving the target to another device or dtype.
        """
        c, tc = self.config, target.config
        embed = target.embed_tokens.weight.detach()
        checks = [
            ("vocab_size", c.vocab_size, tc.vocab_size),
            ("target_hidden_size", c.target_hidden_size, tc.hidden_size),
            ("hidden_size (embedding width)", c.hidden_size, embed.shape[1]),
        ]
        for name, want, got in checks:
            if want != got:
                raise DrafterMismatchError(f"drafter {name} is {want} but the target has {got}")
        head = None
        if self.lm_head is None:
            head = target.lm_head.weight.detach()
            if tuple(head.shape) != (c.vocab_size, c.hidden_size):
                raise DrafterMismatchError(
                    f"drafter needs a target lm_head of shape {(c.vocab_size, c.hidden_size)}, "
                    f"found {tuple(head.shape)}"
                )
        else:
            self.check_vocab_map()
        ref = self.fc.weight
        self._shared = (
            embed.to(ref.device, ref.dtype),
            None if head is None else head.to(ref.device, ref.dtype),
        )
        return self

    @property
    def attached(self) -> bool:
        return self._shared is not None

    def check_vocab_map(self) -> None:
        if self.d2t is None:
            return
        ids = self.draft_to_target()
        if int(ids.min()) < 0 or int(ids.max()) >= self.config.vocab_size:
            raise DrafterMismatchError(
                f"d2t maps draft ids to target ids in [{int(ids.min())}, {int(ids.max())}], "
                f"outside the target vocabulary 0..{self.config.vocab_size - 1}"
            )

    def set_vocab_map(self, target_ids: torch.Tensor) -> None:
        """Reduced vocabulary: draft id i stands for target id target_ids[i] ([draft_vocab]
        LongTensor)."""
        if self.d2t is None or target_ids.shape != self.d2t.shape:
            raise ValueError("set_vocab_map needs an own head and one target id per draft id")
        target_ids = target_ids.to(self.d2t.device, torch.long)
        if target_ids.unique().numel() != target_ids.numel():
            raise ValueError("set_vocab_map: two draft ids map to the same target id")
        self.d2t.copy_(target_ids - torch.arange(len(target_ids), device=target_ids.device))
        self.check_vocab_map()
        self.t2d.zero_()
        self.t2d[target_ids] = True

    def draft_to_target(self, ids: torch.Tensor | None = None) -> torch.Tensor:
        """Target ids of draft ids (all draft ids when ``ids`` is None)."""
        if ids is None:
            ids = torch.arange(self.config.draft_vocab_size, device=self.fc.weight.device)
        return ids if self.d2t is None else ids + self.d2t[ids]

    def _need_shared(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        if self._shared is None:
            raise RuntimeError("drafter is not attached to a target: call attach(target) first")
        return self._shared

    @property
    def head_weight(self) -> torch.Tensor:
        """[draft_vocab, H]: the own lm_head, or the target's (frozen)."""
        return self.lm_head.weight if self.lm_head is not None else self._need_shared()[1]

    # ---- network --------------------------------------------------------------------------------
    def new_cache(self, capacity: int | None = None, batch: int = 1) -> KVCache:
        c, w = self.config, self.fc.weight
        return KVCache(
            1,
            batch,
            c.num_key_value_heads,
            c.head_dim,
            capacity or c.max_position_embeddings,
            w.dtype,
            w.device,
        )

    def fuse(self, taps: torch.Tensor) -> torch.Tensor:
        """taps [B, T, 3Ht] (low|mid|high) -> [B, T, H]."""
        if torch.is_grad_enabled() and taps.is_inference():
            taps = taps.clone()  # taps from an inference_mode target pass, used for training
        taps = taps.to(self.fc.weight.dtype)
        if self.chunk_norms is not None:
            taps = torch.cat(
                [n(x) for n, x in zip(self.chunk_norms, taps.chunk(3, dim=-1))], dim=-1
            )
        return self.fc(taps)

    def forward(
        self,
        hidden: torch.Tensor,
        tokens: torch.Tensor,
        cache: KVCache,
        positions: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        key_positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """hidden [B, T, H], tokens [B, T] -> out [B, T, H] (pre-norm).

        Writes k/v at slots cache.length.. without committing. positions [T] (default:
        slot numbers); mask bool [T, length+T] (default causal); key_positions [length+T]:
        rope position of every slot (default: prefix slots = their index, new = positions),
        used only by the sliding window: key visible iff key_pos > query_pos - window.
        Batched callers with per-row layouts pass positions [B, T], mask [B, 1, T, length+T]
        and key_positions [B, length+T].
        """
        embed = self._need_shared()[0]
        start, t = cache.length, tokens.shape[1]
        device = hidden.device
        if positions is None:
            positions = torch.arange(start, start + t, device=device)
        first_key = 0
        window = self.config.window
        if window is not None:
            if mask is None:
                mask = prefix_causal_mask(start, t, device)
            if key_positions is None:
                key_positions = torch.cat([torch.arange(start, device=device), positions])
            if (
                key_positions.shape[-1] != start + t
                or positions.shape[-1] != t
                or key_positions.dim() != positions.dim()
            ):
                raise ValueError(
                    f"sliding window needs positions [{t}] and key_positions [{start + t}] "
                    "(or [B, T] and [B, S])"
                )
            visible = (
                key_positions[..., None, :] > positions[..., :, None] - window
            )  # [T, S] or [B, T, S]
            mask = mask & (visible if positions.dim() == 1 else visible[:, None])
            first_key = int(mask.reshape(-1, mask.shape[-1]).any(0).int().argmax())
        elif mask is None and start > 0 and t > 1:
            mask = prefix_causal_mask(start, t, device)
        rope = self.rope(positions, hidden.dtype)
        embeds = F.embedding(tokens, embed).to(hidden.dtype)  # [B, T, H]
        return self.midlayer(embeds, hidden, rope, cache, start, mask, first_key)

    # ---- head -----------------------------------------------------------------------------------
    def logits(self, out: torch.Tensor) -> torch.Tensor:
        """out [..., H] -> exact draft-vocab logits [..., draft_vocab]."""
        return F.linear(self.norm(out), self.head_weight)

    def logprobs(self, out: torch.Tensor) -> torch.Tensor:
        """out [..., H] -> full-head log-softmax [..., draft_vocab] (draft-vocab space)."""
        return torch.log_softmax(self.logits(out).float(), dim=-1)

    def lowrank_logits(self, out: torch.Tensor) -> torch.Tensor:
        """out [..., H] -> rank-r approximate logits [..., draft_vocab]."""
        if self.lowrank_down is None:
            raise RuntimeError("this drafter has no low-rank head (lowrank_rank is None)")
        return (self.norm(out) @ self.lowrank_down.t()) @ self.lowrank_up.t()

    def topk(self, out: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """out [..., H] -> (log-probs [..., k], TARGET token ids [..., k]), best first."""
        lead, x = out.shape[:-1], self.norm(out.reshape(-1, out.shape[-1]))  # x [n, H]
        weight = self.head_weight  # [Vd, H]
        if self.lowrank_down is None:
            logp, ids = torch.log_softmax(F.linear(x, weight).float(), dim=-1).topk(k, dim=-1)
        else:
            m = min(self.config.lowrank_candidates, self.config.draft_vocab_size)
            if k > m:
                raise ValueError(f"k={k} exceeds the {m} low-rank candidates")
            approx = ((x @ self.lowrank_down.t()) @ self.lowrank_up.t()).float()  # [n, Vd]
            cand = approx.topk(m, dim=-1).indices  # [n, m]
            exact = torch.einsum("nh,nmh->nm", x, weight[cand]).float()  # [n, m]
            rest = approx.scatter(1, cand, float("-inf"))  # others: low-rank
            lse = torch.logsumexp(torch.cat([exact, rest], dim=-1), dim=-1, keepdim=True)
            best, j = exact.topk(k, dim=-1)
            logp, ids = best - lse, cand.gather(1, j)
        return logp.reshape(*lead, k), self.draft_to_target(ids).reshape(*lead, k)

    @torch.no_grad()
    def init_lowrank_from_head(self) -> None:
        """W_r, U_r from a truncated SVD of the draft head: head ~= U_r @ W_r (sqrt(S) on each
        side)."""
        if self.lowrank_down is None:
            raise RuntimeError("this drafter has no low-rank head (lowrank_rank is None)")
        r = self.config.lowrank_rank
        u, s, vh = torch.linalg.svd(self.head_weight.float(), full_matrices=False)
        root = s[:r].sqrt()
        self.lowrank_down.copy_(root[:, None] * vh[:r])  # [r, H]
        self.lowrank_up.copy_(u[:, :r] * root)  # [Vd, r]
