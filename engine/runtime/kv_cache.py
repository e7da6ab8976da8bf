"""Preallocated, position-indexed key/value cache of the target model.

Slots ``[0, length)`` hold the committed prefix. A forward pass writes its
tokens (a single token, a prompt chunk, or a draft tree) into the slots right
after the prefix; nothing is committed until the caller says so. After tree
verification ``compact`` copies the accepted nodes' entries into place and
``commit`` extends the prefix. Rolling back is just lowering ``length``:
stale slots are overwritten by the next write.

Not here: attention itself (``engine.runtime.layers.attend``) or any policy.
"""

from __future__ import annotations

import torch


class CacheFullError(RuntimeError):
    """Writing would pass the cache's preallocated capacity."""


class KVCache:
    def __init__(self, num_layers: int, batch: int, num_kv_heads: int, head_dim: int,
                 capacity: int, dtype: torch.dtype, device: torch.device | str = "cpu") -> None:
        shape = (num_layers, batch, num_kv_heads, capacity, head_dim)
        self.k = torch.zeros(shape, dtype=dtype, device=device)  # [L, B, Hkv, S, D]
        self.v = torch.zeros(shape, dtype=dtype, device=device)
        self.capacity = capacity
        self.length = 0

    def write(self, layer: int, start: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store k, v [B, Hkv, T, D] at slots start.. and return the views of slots [0, start+T)."""
        end = start + k.shape[2]
        if end > self.capacity:
            raise CacheFullError(f"KV cache holds {self.capacity} tokens; {end} needed")
        self.k[layer, :, :, start:end] = k
        self.v[layer, :, :, start:end] = v
        return self.k[layer, :, :, :end], self.v[layer, :, :, :end]

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
        """Copy entries at absolute ``slots`` [n] (ascending) to ``length..length+n`` and commit them."""
        count = int(slots.numel())
        dest = torch.arange(self.length, self.length + count, device=self.k.device)
        slots = slots.to(self.k.device)
        if not torch.equal(slots, dest):
            self.k[:, :, :, dest] = self.k[:, :, :, slots]
            self.v[:, :, :, dest] = self.v[:, :, :, slots]
        self.commit(count)

    def reset(self) -> None:
        self.length = 0
