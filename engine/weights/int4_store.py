"""The int4 model kept on disk, so that a new process skips quantizing it (~1.5 s on 2 cores).

``engine.weights.loading.load_int4`` saves a model here after quantizing it and
restores it from here next time: one safetensors file per model directory,
``$PROMPTX_CACHE/int4/<dir name>-<key>.safetensors`` (~390 MB for the embedded model: the
packed 4-bit weights, their bf16 copies for prompt passes, the 8-bit head and
low-rank terms, embeddings and norms). The key covers the directory's weight
files (path, sizes, modification times), the torch version and the CPU
capability torch dispatches to (the packed layout is the kernel's); the
``KEEP`` most recently used stay. A model that quantizing changed more than the
caller accepts is not stored: a few bytes beside it (``<stem>.far``) keep its
grid distance, so the next process refuses it without quantizing. Best effort:
a missing, unreadable or unwritable store means quantizing again.

Not here: quantizing (``engine.runtime.int4``).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import torch
from torch import nn

from ..runtime.config import ModelConfig
from ..runtime.int4 import Int4Linear, Int8Linear
from ..runtime.model import Transformer
from .cache_dir import cache_root, evict_oldest

FORMAT = "int4-store-1"
KEEP = 3  # stores kept (models x torch versions x CPU capabilities), least recently used go first
ALIGN = 64  # bytes: torch's own allocations are aligned so; a tensor read from the file may not be


def store_path(model_dir: str | Path, identity: str) -> Path:
    """Where the int4 form of the model in ``model_dir`` (``identity``: its weight files) is
    kept."""
    key = "|".join([identity, torch.__version__, torch.backends.cpu.get_cpu_capability(), FORMAT])
    return (
        cache_root()
        / "int4"
        / f"{Path(model_dir).name[:40]}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.safetensors"
    )


def save_int4(model: Transformer, distance: float, path: Path) -> None:
    """Write an int4 ``model`` (``engine.runtime.int4.quantize_int4``) and its grid distance."""
    from safetensors.torch import save_file

    tensors: dict[str, torch.Tensor] = {}
    for name, module in model.named_modules():
        if isinstance(module, Int4Linear):
            tensors.update(module.tensors(name))
    tied = model.lm_head.weight.data_ptr() == model.embed_tokens.weight.data_ptr()
    tensors.update(model.lm_head.tensors("lm_head", skip_weight=tied))
    tensors.update(
        {
            name: p.data
            for name, p in model.named_parameters()
            if not name.startswith(("lm_head.",)) and name not in tensors
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp")
    try:
        save_file(
            {k: v.contiguous() for k, v in tensors.items()},
            str(tmp),
            metadata={"format": FORMAT, "grid_distance": repr(distance), "tied": str(tied)},
        )
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    evict_oldest(path.parent, KEEP)


def save_refusal(path: Path, distance: float) -> None:
    """Remember that the model of store ``path`` moved ``distance`` grid steps (best effort)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.with_suffix(".far").write_text(repr(distance))
    except OSError:
        pass


def stored_refusal(path: Path) -> float | None:
    """The grid distance ``save_refusal`` kept for store ``path``, or None."""
    try:
        return float(path.with_suffix(".far").read_text())
    except (OSError, ValueError):
        return None


def load_stored_int4(model_dir: str | Path, path: Path) -> tuple[Transformer, float] | None:
    """The int4 model stored at ``path`` for ``model_dir`` and its grid distance; None when the
    store is missing or unusable."""
    from safetensors import safe_open
    from safetensors.torch import load_file

    try:
        with safe_open(str(path), "pt") as handle:
            meta = handle.metadata() or {}
        # the kernels read with aligned vector loads: copy what the file's layout left unaligned
        tensors = {
            k: v if v.data_ptr() % ALIGN == 0 else v.clone()
            for k, v in load_file(str(path)).items()
        }
        if meta.get("format") != FORMAT:
            return None
        restored = _restore(ModelConfig.from_file(Path(model_dir) / "config.json"), tensors, meta)
    except (
        Exception
    ):  # a damaged or foreign file: quantize again (safetensors raises its own types)
        return None
    try:
        os.utime(path)  # recently used: evicted last
    except OSError:
        pass
    return restored


def _restore(
    cfg: ModelConfig, tensors: dict[str, torch.Tensor], meta: dict
) -> tuple[Transformer, float] | None:
    with torch.device("meta"):
        model = Transformer(cfg, torch.bfloat16)
    for name, module in list(model.named_modules()):
        if type(module) is nn.Linear and name != "lm_head":
            parent, _, leaf = name.rpartition(".")
            setattr(model.get_submodule(parent), leaf, Int4Linear.restore(name, tensors))
    plain = {
        k: v for k, v in tensors.items() if k == "embed_tokens.weight" or k.endswith("norm.weight")
    }
    model.load_state_dict(plain, strict=False, assign=True)
    tied = meta.get("tied") == "True"
    model.lm_head = Int8Linear.restore(
        "lm_head", tensors, weight=model.embed_tokens.weight if tied else None
    )
    model.rope = type(model.rope)(cfg.head_dim, cfg.rope_theta, cfg.max_position_embeddings)
    model.precision = "int4"
    if any(t.is_meta for t in list(model.parameters()) + list(model.buffers())):
        return None
    return model.eval(), float(meta["grid_distance"])
