"""Low-rank adapters (LoRA) on the target runtime's linear layers, their file, and merging them.

``attach_lora`` wraps the chosen projections of an ``engine.runtime.model.Transformer``
(fused ``qkv_proj`` / ``gate_up_proj`` included) in ``LoRALinear``: the base
weight stays frozen and ``W x + s B A x`` is learned, with ``B`` starting at
zero so a fresh adapter changes nothing. ``save_adapter`` writes the A/B
tensors as one safetensors file with its rank, alpha and base model in the
metadata; ``merge_into_hf_state`` adds the deltas to a Hugging Face state dict
(splitting fused rows back into q/k/v and gate/up), which is how an adapter
is applied once when a model directory is prepared.

Not here: the training loop (``engine.training.sft``) or which adapter a
product ships (promptx decides).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from ..runtime.config import ModelConfig

__all__ = [
    "ADAPTER_FORMAT", "ADAPTER_NOTE", "DEFAULT_MODULES", "AdapterError", "AdapterInfo", "LoRALinear",
    "adapter_extra", "adapter_parameters", "apply_adapter_to_dir", "attach_lora", "load_adapter",
    "merge_into_hf_state", "merge_lora", "read_adapter_info", "read_adapter_note", "save_adapter",
]

ADAPTER_FORMAT = "promptx-lora-1"
ADAPTER_NOTE = "adapter.json"      # written into a model directory an adapter was merged into
DEFAULT_MODULES = ("qkv_proj", "o_proj", "gate_up_proj", "down_proj")


class AdapterError(ValueError):
    """An adapter file is unreadable or does not fit the model it is applied to."""


@dataclass(frozen=True)
class AdapterInfo:
    rank: int
    alpha: float
    modules: tuple[str, ...]
    base: str = ""           # identity of the model it was trained on (informational)
    extra: str = "{}"        # JSON the trainer adds (prompt style, data, steps)

    @property
    def scale(self) -> float:
        return self.alpha / self.rank


class LoRALinear(nn.Module):
    """``base(x) + scale * B(A(x))`` with the base frozen; B starts at zero."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float) -> None:
        super().__init__()
        if rank < 1:
            raise ValueError(f"LoRA rank must be >= 1, got {rank}")
        self.base, self.rank, self.scale = base, rank, alpha / rank
        base.weight.requires_grad_(False)
        if base.bias is not None:
            base.bias.requires_grad_(False)
        dtype, device = base.weight.dtype, base.weight.device
        self.lora_A = nn.Parameter(torch.empty(rank, base.in_features, dtype=dtype, device=device))
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, rank, dtype=dtype, device=device))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + (x @ self.lora_A.t() @ self.lora_B.t()) * self.scale

    def delta(self) -> torch.Tensor:
        """The weight change ``scale * B @ A`` [out, in]."""
        return (self.lora_B @ self.lora_A) * self.scale


def _targets(model: nn.Module, modules: tuple[str, ...]):
    for name, module in model.named_modules():
        for child_name, child in module.named_children():
            if child_name in modules and isinstance(child, nn.Linear):
                yield module, child_name, f"{name}.{child_name}" if name else child_name


def attach_lora(model: nn.Module, rank: int = 16, alpha: float = 32.0,
                modules: tuple[str, ...] = DEFAULT_MODULES) -> AdapterInfo:
    """Freeze ``model`` and wrap every linear layer named in ``modules`` in a LoRALinear."""
    for p in model.parameters():
        p.requires_grad_(False)
    found = list(_targets(model, modules))
    if not found:
        raise AdapterError(f"the model has no linear layers named {', '.join(modules)}")
    for parent, child_name, _ in found:
        setattr(parent, child_name, LoRALinear(getattr(parent, child_name), rank, alpha))
    return AdapterInfo(rank=rank, alpha=float(alpha), modules=tuple(modules))


def _wrapped(model: nn.Module) -> dict[str, LoRALinear]:
    return {name: m for name, m in model.named_modules() if isinstance(m, LoRALinear)}


def adapter_parameters(model: nn.Module) -> list[nn.Parameter]:
    """The trainable A and B matrices, in a stable order."""
    return [p for m in _wrapped(model).values() for p in (m.lora_A, m.lora_B)]


def save_adapter(model: nn.Module, path: str | Path, info: AdapterInfo) -> Path:
    """Write the A/B tensors (float32) and ``info`` as one safetensors file."""
    from safetensors.torch import save_file

    wrapped = _wrapped(model)
    if not wrapped:
        raise AdapterError("the model has no LoRA layers to save")
    tensors = {}
    for name, m in wrapped.items():
        tensors[f"{name}.lora_A"] = m.lora_A.detach().float().contiguous().cpu()
        tensors[f"{name}.lora_B"] = m.lora_B.detach().float().contiguous().cpu()
    meta = {"format": ADAPTER_FORMAT, "rank": str(info.rank), "alpha": str(info.alpha),
            "modules": ",".join(info.modules), "base": info.base, "extra": info.extra}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    save_file(tensors, str(tmp), metadata=meta)
    tmp.replace(path)
    return path


def read_adapter_info(path: str | Path) -> AdapterInfo:
    """The metadata of an adapter file, without reading its tensors."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), "pt") as handle:
            meta = handle.metadata() or {}
    except Exception as exc:           # safetensors' own error type is not an OSError
        raise AdapterError(f"{path}: not a readable adapter file ({exc})") from None
    if meta.get("format") != ADAPTER_FORMAT:
        raise AdapterError(f"{path}: not a promptx LoRA adapter (format {meta.get('format')!r})")
    return AdapterInfo(rank=int(meta["rank"]), alpha=float(meta["alpha"]),
                       modules=tuple(meta["modules"].split(",")), base=meta.get("base", ""),
                       extra=meta.get("extra", "{}"))


def load_adapter(path: str | Path) -> tuple[AdapterInfo, dict[str, torch.Tensor]]:
    from safetensors.torch import load_file

    info = read_adapter_info(path)
    return info, load_file(str(path))


def _pairs(tensors: dict[str, torch.Tensor]) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    names = {k.rsplit(".", 1)[0] for k in tensors}
    try:
        return {n: (tensors[f"{n}.lora_A"], tensors[f"{n}.lora_B"]) for n in sorted(names)}
    except KeyError as exc:
        raise AdapterError(f"adapter lacks the tensor {exc.args[0]}") from None


def merge_lora(model: nn.Module) -> nn.Module:
    """Fold every LoRALinear's delta into its base layer and unwrap it (in place)."""
    with torch.no_grad():
        for name, m in list(_wrapped(model).items()):
            m.base.weight.add_(m.delta().to(m.base.weight.dtype))
            parent = model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model
            setattr(parent, name.rsplit(".", 1)[-1], m.base)
    return model


def _hf_split(name: str, cfg: ModelConfig) -> list[tuple[str, int]]:
    """Hugging Face weight names (and row counts) that the runtime's ``name`` fuses."""
    head = "model." + name.rsplit(".", 1)[0]
    leaf = name.rsplit(".", 1)[-1]
    if leaf == "qkv_proj":
        q, kv = cfg.num_attention_heads * cfg.head_dim, cfg.num_key_value_heads * cfg.head_dim
        return [(f"{head}.q_proj.weight", q), (f"{head}.k_proj.weight", kv), (f"{head}.v_proj.weight", kv)]
    if leaf == "gate_up_proj":
        return [(f"{head}.gate_proj.weight", cfg.intermediate_size), (f"{head}.up_proj.weight", cfg.intermediate_size)]
    return [(f"model.{name}.weight", -1)]


def merge_into_hf_state(state: dict[str, torch.Tensor], tensors: dict[str, torch.Tensor],
                        info: AdapterInfo, cfg: ModelConfig) -> dict[str, torch.Tensor]:
    """Add the adapter's deltas to a Hugging Face state dict (in place) and return it."""
    for name, (a, b) in _pairs(tensors).items():
        delta = (b.double() @ a.double()) * info.scale
        row = 0
        for hf_name, rows in _hf_split(name, cfg):
            if hf_name not in state:
                raise AdapterError(f"adapter layer {name} has no weight {hf_name} in the model")
            rows = delta.shape[0] if rows < 0 else rows
            weight = state[hf_name]
            part = delta[row:row + rows]
            if part.shape != weight.shape:
                raise AdapterError(f"adapter layer {name}: delta {tuple(part.shape)} does not fit "
                                   f"{hf_name} {tuple(weight.shape)} (trained on another model?)")
            state[hf_name] = (weight.double() + part).to(weight.dtype)
            row += rows
    return state


def apply_adapter_to_dir(model_dir: str | Path, adapter: str | Path) -> Path:
    """Merge ``adapter`` into the weights of a Hugging Face style model directory (in place).

    The merged weights replace the directory's safetensors files (one
    ``model.safetensors``) and ``ADAPTER_NOTE`` records the adapter's
    metadata, so a loader can tell a tuned directory from its base.
    """
    from safetensors.torch import save_file

    from ..weights.loading import read_state_dict

    model_dir = Path(model_dir)
    info, tensors = load_adapter(adapter)
    cfg = ModelConfig.from_file(model_dir / "config.json")
    state = merge_into_hf_state(read_state_dict(model_dir), tensors, info, cfg)
    old = sorted(model_dir.glob("*.safetensors"))
    tmp = model_dir / "model.safetensors.tmp"
    save_file({k: v.contiguous() for k, v in state.items()}, str(tmp), metadata={"format": "pt"})
    for path in old:
        path.unlink()
    tmp.replace(model_dir / "model.safetensors")
    note = {"format": ADAPTER_FORMAT, "rank": info.rank, "alpha": info.alpha, "modules": list(info.modules),
            "base": info.base, "extra": adapter_extra(info)}
    (model_dir / ADAPTER_NOTE).write_text(json.dumps(note, indent=2) + "\n")
    return model_dir


def read_adapter_note(model_dir: str | Path) -> dict:
    """The ``ADAPTER_NOTE`` of a merged model directory, {} for an untuned one."""
    path = Path(model_dir) / ADAPTER_NOTE
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def adapter_extra(info: AdapterInfo) -> dict:
    """The trainer's JSON notes of an adapter ({} when unreadable)."""
    try:
        return json.loads(info.extra)
    except ValueError:
        return {}
