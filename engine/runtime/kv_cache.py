"""Preallocated, position-indexed key/value cache of the target model.

Slots ``[0, length)`` hold the committed prefix. A forward pass writes its
tokens (a single token, a prompt chunk, or a draft tree) into the slots right
after the prefix; nothing is committed until the caller says so. After tree
verification ``compact`` copies the accepted nodes' entries into place and
``commit`` extends the prefix. Rolling back is just lowering ``length``:
stale slots are overwritten by the next write.

Attention reads keys in spans that are a multiple of ``KEY_ALIGN`` slots (the
slots past the written ones are masked): the CPU attention kernels treat the
last, partial vector of keys differently (scalar instead of vector maths), so
a query's numbers would otherwise depend on how many keys follow it, and a
verification pass over several tokens would round differently from the
single-token steps of plain decoding. With aligned spans every row of a pass
equals the step that computes it alone, in bf16 too. Storage is allocated up
to the next multiple so that the last span fits (``spans=True``; the exact
half-precision mode of ``engine.runtime.exact_rows``).

Not here: attention itself (``engine.runtime.layers.attend``) or any policy.
"""

from __future__ import annotations

import torch

KEY_ALIGN = 64  # keys per attention span: a multiple of every CPU vector width (4-16 floats)


def aligned(length: int) -> int:
    """``length`` rounded up to a multiple of ``KEY_ALIGN``."""
    return -(-length // KEY_ALIGN) * KEY_ALIGN


class CacheFullError(RuntimeError):
    """Writing would pass the cache's preallocated capacity."""


class KVCache:
    def __init__(
        self,
        num_layers: int,
        batch: int,
        num_kv_heads: int,
        head_dim: int,
        capacity: int,
        dtype: torch.dtype,
        device: torch.device | str = "cpu",
        *,
        spans: bool = False,
    ) -> None:
        # spans: storage up to aligned(capacity), for models that read keys in aligned spans
        shape = (
            num_layers,
            batch,
            num_kv_heads,
            aligned(capacity) if spans else capacity,
            head_dim,
        )
        self.k = torch.zeros(shape, dtype=dtype, device=device)  # [L, B, Hkv, S, D]
        self.v = torch.zeros(shape, dtype=dtype, device=device)
        self.capacity = capacity
        self.length = 0

    def write(
        self,
        layer: int,
        start: int,
        k: torch.Tensor,
        v: torch.Tensor,
        span: int | None = None,
        slots: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Store k, v [B, Hkv, T, D] at slots start.. (or at ``slots`` [T], each >= start) and
        return the views of slots [0, span) (default: up to the last slot written)."""
        end = start + k.shape[2] if slots is None else int(slots.max()) + 1
        if end > self.capacity:
            raise CacheFullError(f"KV cache holds {self.capacity} tokens; {end} needed")
        where = slice(start, end) if slots is None else slots
        self.k[layer, :, :, where] = k
        self.v[layer, :, :, where] = v
        span = end if span is None else span
        return self.k[layer, :, :, :span], self.v[layer, :, :, :span]

    def rows(self) -> list["KVCache"]:
        """One cache per batch row over this cache's storage (each with its own length): the
        rows of a batch that decode as single sequences but share tensors (one attention call
        over several rows reads them in place)."""
        out = []
        for row in range(self.k.shape[1]):
            view = KVCache.__new__(KVCache)
            view.k, view.v = self.k[:, row : row + 1], self.v[:, row : row + 1]
            view.capacity, view.length = self.capacity, 0
            out.append(view)
        return out

    def commit(self, count: int) -> None:
        """Make ``count`` slots after the prefix part of it."""
        if self.length + count > self.capacity:
            raise CacheFullError(f"KV cache holds {self.capacity} tokens")
        self.length += count

    def rollback(self, length: int) -> None:
        """Shrink the committed prefix to ``length`` tokens."""
        if not 0 <= length <= self.length:
            raise ValueError(f"cannot roll back to {length} from {self.length}")
        self.length = length

    def compact(self, slots: torch.Tensor) -> None:
        """Copy entries at absolute ``slots`` [n] (each >= length) to ``length..length+n`` and
        commit them."""
        count = int(slots.numel())
        dest = torch.arange(self.length, self.length + count, device=self.k.device)
        slots = slots.to(self.k.device)
        if not torch.equal(slots, dest):
            self.k[:, :, :, dest] = self.k[:, :, :, slots]
            self.v[:, :, :, dest] = self.v[:, :, :, slots]
        self.commit(count)

    def reset(self) -> None:
        self.length = 0
