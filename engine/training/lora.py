"""Low-rank adapters (LoRA) on the target runtime's linear layers, for training them.

``attach_lora`` wraps the chosen projections of an ``engine.runtime.model.Transformer``
(fused ``qkv_proj`` / ``gate_up_proj`` included) in ``LoRALinear``: the base
weight stays frozen and ``W x + s B A x`` is learned, with ``B`` starting at
zero so a fresh adapter changes nothing. ``save_adapter`` writes the A/B
tensors as one adapter file (the format, reading it and merging it into a
model directory: ``engine.weights.adapters``, re-exported here).

Not here: the training loop (``engine.training.sft``) or which adapter a
product ships (promptx decides).
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
from torch import nn

from ..weights.adapters import (
    ADAPTER_FORMAT,
    ADAPTER_NOTE,
    AdapterError,
    AdapterInfo,
    adapter_extra,
    apply_adapter_to_dir,
    load_adapter,
    merge_into_hf_state,
    read_adapter_info,
    read_adapter_note,
)

__all__ = [
    "ADAPTER_FORMAT",
    "ADAPTER_NOTE",
    "DEFAULT_MODULES",
    "AdapterError",
    "AdapterInfo",
    "LoRALinear",
    "adapter_extra",
    "adapter_parameters",
    "apply_adapter_to_dir",
    "attach_lora",
    "load_adapter",
    "merge_into_hf_state",
    "merge_lora",
    "read_adapter_info",
    "read_adapter_note",
    "save_adapter",
]

DEFAULT_MODULES = ("qkv_proj", "o_proj", "gate_up_proj", "down_proj")


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


def attach_lora(
    model: nn.Module,
    rank: int = 16,
    alpha: float = 32.0,
    modules: tuple[str, ...] = DEFAULT_MODULES,
) -> AdapterInfo:
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
    meta = {
        "format": ADAPTER_FORMAT,
        "rank": str(info.rank),
        "alpha": str(info.alpha),
        "modules": ",".join(info.modules),
        "base": info.base,
        "extra": info.extra,
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    save_file(tensors, str(tmp), metadata=meta)
    tmp.replace(path)
    return path


def merge_lora(model: nn.Module) -> nn.Module:
    """Fold every LoRALinear's delta into its base layer and unwrap it (in place)."""
    with torch.no_grad():
        for name, m in list(_wrapped(model).items()):
            m.base.weight.add_(m.delta().to(m.base.weight.dtype))
            parent = model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model
            setattr(parent, name.rsplit(".", 1)[-1], m.base)
    return model
