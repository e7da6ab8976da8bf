"""The KV entries of a prompt's fixed prefix (system prompt, examples), kept for reuse.

Every call with the same template repeats a few hundred prefix tokens; their
keys and values depend only on those tokens, so the prefill runs them once,
stores them (in memory, and as a safetensors file under the cache root so a
new process skips them too) and later prefills only the rest.

The prefill is always split at the prefix boundary, stored or not, so a warm
and a cold call compute the same numbers. A split prefill rounds differently
from a one-pass prefill, which is why ``Generator`` uses this only for
plain-only precisions, where no speculative decode must match plain decoding.
Not here: choosing the boundary (the caller knows its template).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections import OrderedDict
from pathlib import Path
from typing import Sequence

import torch

from ..weights.cache_dir import cache_root, evict_oldest

FORMAT = 1


def prefix_dir() -> Path:
    return cache_root() / "prefixes"


class PrefixCache:
    """Prefix KV tensors [L, Hkv, n, D] keyed by model identity and token ids."""

    def __init__(
        self,
        identity: str,
        directory: str | Path | None = None,
        *,
        memory_entries: int = 8,
        disk_entries: int = 32,
    ) -> None:
        self.identity = identity
        self.directory = Path(directory) if directory is not None else None
        self.memory_entries, self.disk_entries = memory_entries, disk_entries
        self._memory: OrderedDict[str, tuple[torch.Tensor, torch.Tensor]] = OrderedDict()

    def key(self, ids: Sequence[int]) -> str:
        # thread count and torch version change how matmuls round: part of the key
        digest = hashlib.sha256(
            f"{FORMAT}|{torch.__version__}|{torch.get_num_threads()}|{self.identity}".encode()
        )
        digest.update(",".join(map(str, ids)).encode())
        return digest.hexdigest()[:32]

    def load(self, ids: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor] | None:
        key = self.key(ids)
        if key in self._memory:
            self._memory.move_to_end(key)
            return self._memory[key]
        entry = self._read(key, len(ids))
        if entry is not None:
            self._remember(key, entry)
        return entry

    def save(self, ids: Sequence[int], k: torch.Tensor, v: torch.Tensor) -> None:
        key = self.key(ids)
        entry = (k.detach().clone(), v.detach().clone())
        self._remember(key, entry)
        self._write(key, entry)

    def _remember(self, key: str, entry) -> None:
        self._memory[key] = entry
        self._memory.move_to_end(key)
        while len(self._memory) > self.memory_entries:
            self._memory.popitem(last=False)

    def _read(self, key: str, length: int):
        path = self.directory / f"{key}.safetensors" if self.directory else None
        if path is None or not path.is_file():
            return None
        from safetensors import SafetensorError
        from safetensors.torch import load_file

        try:
            tensors = load_file(str(path))
            k, v = tensors["k"], tensors["v"]
        except (SafetensorError, OSError, KeyError):
            return None  # a damaged or vanished file is a miss; the next save replaces it
        if k.shape != v.shape or k.ndim != 4 or k.shape[2] != length:
            return None
        try:
            os.utime(path)  # recently used: evicted last
        except OSError:
            pass  # read-only or shared cache: eviction order only
        return k, v

    def _write(self, key: str, entry) -> None:
        if self.directory is None:
            return
        from safetensors import SafetensorError
        from safetensors.torch import save_file

        tmp = None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            handle, tmp = tempfile.mkstemp(prefix=f"{key}.", suffix=".tmp", dir=self.directory)
            os.close(handle)
            save_file({"k": entry[0].cpu().contiguous(), "v": entry[1].cpu().contiguous()}, tmp)
            os.replace(tmp, self.directory / f"{key}.safetensors")
            tmp = None
            evict_oldest(self.directory, self.disk_entries)
        except (OSError, SafetensorError):
            pass  # a read-only or full cache disk only costs speed
        finally:
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)


def prefill_split(model, prompt_ids: Sequence[int], cache, prefixes: PrefixCache, prefix_len: int):
    """Prefill ``prompt_ids`` in two passes split at ``prefix_len`` (at least one token is left
    for the second), the first restored from ``prefixes`` when stored; return the last row's
    output. Commits the whole prompt to ``cache`` (batch 1)."""
    n = max(0, min(prefix_len, len(prompt_ids) - 1))
    device = cache.k.device
    if n:
        stored = prefixes.load(prompt_ids[:n])
        if stored is None:
            model(torch.tensor([list(prompt_ids[:n])], device=device), cache, logits_at=slice(0, 0))
            prefixes.save(prompt_ids[:n], cache.k[:, 0, :, :n], cache.v[:, 0, :, :n])
        else:
            cache.k[:, 0, :, :n] = stored[0].to(device)
            cache.v[:, 0, :, :n] = stored[1].to(device)
        cache.commit(n)
    rest = torch.tensor([list(prompt_ids[n:])], device=device)
    out = model(rest, cache, logits_at=slice(-1, None))
    cache.commit(rest.shape[1])
    return out
