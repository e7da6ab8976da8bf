"""The adapter file format (promptx-lora-1), and applying an adapter to a model directory.

An adapter file holds the A/B tensors of each adapted layer (names of the
runtime's fused layers: ``layers.N.self_attn.qkv_proj``, ...) with rank, alpha
and base model in its metadata. ``merge_into_hf_state`` adds the deltas to a
Hugging Face state dict (splitting fused rows back into q/k/v and gate/up);
``apply_adapter_to_dir`` does that once when a model directory is prepared,
and keeps a copy of the adapter in the directory (``ADAPTER_COPY``), so that a
loader that wants the base weights and the low-rank terms apart (the int4
precision, ``engine.weights.loading.load_int4``) can subtract it again.

Not here: training adapters or the LoRA layers (``engine.training.lora``).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import torch

from ..runtime.config import ModelConfig
from .state_dict import read_state_dict

ADAPTER_FORMAT = "promptx-lora-1"
ADAPTER_NOTE = "adapter.json"  # written into a model directory an adapter was merged into
ADAPTER_COPY = (
    "adapter/adapter.safetensors"  # the merged adapter itself (not a *.safetensors of the model)
)


class AdapterError(ValueError):
    """An adapter file is unreadable or does not fit the model it is applied to."""


@dataclass(frozen=True)
class AdapterInfo:
    rank: int
    alpha: float
    modules: tuple[str, ...]
    base: str = ""  # identity of the model it was trained on (informational)
    extra: str = "{}"  # JSON the trainer adds (prompt style, data, steps)

    @property
    def scale(self) -> float:
        return self.alpha / self.rank


def read_adapter_info(path: str | Path) -> AdapterInfo:
    """The metadata of an adapter file, without reading its tensors."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), "pt") as handle:
            meta = handle.metadata() or {}
    except Exception as exc:  # safetensors' own error type is not an OSError
        raise AdapterError(f"{path}: not a readable adapter file ({exc})") from None
    if meta.get("format") != ADAPTER_FORMAT:
        raise AdapterError(f"{path}: not a promptx LoRA adapter (format {meta.get('format')!r})")
    return AdapterInfo(
        rank=int(meta["rank"]),
        alpha=float(meta["alpha"]),
        modules=tuple(meta["modules"].split(",")),
        base=meta.get("base", ""),
        extra=meta.get("extra", "{}"),
    )


def load_adapter(path: str | Path) -> tuple[AdapterInfo, dict[str, torch.Tensor]]:
    from safetensors.torch import load_file

    info = read_adapter_info(path)
    return info, load_file(str(path))


def adapter_pairs(tensors: dict[str, torch.Tensor]) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    names = {k.rsplit(".", 1)[0] for k in tensors}
    try:
        return {n: (tensors[f"{n}.lora_A"], tensors[f"{n}.lora_B"]) for n in sorted(names)}
    except KeyError as exc:
        raise AdapterError(f"adapter lacks the tensor {exc.args[0]}") from None


def _hf_split(name: str, cfg: ModelConfig) -> list[tuple[str, int]]:
    """Hugging Face weight names (and row counts) that the runtime's ``name`` fuses."""
    head = "model." + name.rsplit(".", 1)[0]
    leaf = name.rsplit(".", 1)[-1]
    if leaf == "qkv_proj":
        q, kv = cfg.num_attention_heads * cfg.head_dim, cfg.num_key_value_heads * cfg.head_dim
        return [
            (f"{head}.q_proj.weight", q),
            (f"{head}.k_proj.weight", kv),
            (f"{head}.v_proj.weight", kv),
        ]
    if leaf == "gate_up_proj":
        return [
            (f"{head}.gate_proj.weight", cfg.intermediate_size),
            (f"{head}.up_proj.weight", cfg.intermediate_size),
        ]
    return [(f"model.{name}.weight", -1)]


def merge_into_hf_state(
    state: dict[str, torch.Tensor],
    tensors: dict[str, torch.Tensor],
    info: AdapterInfo,
    cfg: ModelConfig,
) -> dict[str, torch.Tensor]:
    """Add the adapter's deltas to a Hugging Face state dict (in place) and return it."""
    for name, (a, b) in adapter_pairs(tensors).items():
        delta = (b.double() @ a.double()) * info.scale
        row = 0
        for hf_name, rows in _hf_split(name, cfg):
            if hf_name not in state:
                raise AdapterError(f"adapter layer {name} has no weight {hf_name} in the model")
            rows = delta.shape[0] if rows < 0 else rows
            weight = state[hf_name]
            part = delta[row : row + rows]
            if part.shape != weight.shape:
                raise AdapterError(
                    f"adapter layer {name}: delta {tuple(part.shape)} does not fit "
                    f"{hf_name} {tuple(weight.shape)} (trained on another model?)"
                )
            state[hf_name] = (weight.double() + part).to(weight.dtype)
            row += rows
    return state


def apply_adapter_to_dir(model_dir: str | Path, adapter: str | Path) -> Path:
    """Merge ``adapter`` into the weights of a Hugging Face style model directory (in place).

    The merged weights replace the directory's safetensors files (one
    ``model.safetensors``), ``ADAPTER_NOTE`` records the adapter's metadata,
    so a loader can tell a tuned directory from its base, and ``ADAPTER_COPY``
    keeps the adapter (``split_adapter``).
    """
    from safetensors.torch import save_file

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
    note = {
        "format": ADAPTER_FORMAT,
        "rank": info.rank,
        "alpha": info.alpha,
        "modules": list(info.modules),
        "base": info.base,
        "extra": adapter_extra(info),
    }
    (model_dir / ADAPTER_NOTE).write_text(json.dumps(note, indent=2) + "\n")
    (model_dir / ADAPTER_COPY).parent.mkdir(exist_ok=True)
    shutil.copyfile(adapter, model_dir / ADAPTER_COPY)
    return model_dir


def split_adapter(
    model: torch.nn.Module, model_dir: str | Path
) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Take a merged adapter back out of a loaded float32 ``model`` (runtime layer names, in
    place): each adapted weight becomes its base weight again (to float32 precision) and the
    low-rank terms come back as {layer name: (A [rank, in], scale * B [out, rank])}; {} when
    the directory holds no adapter copy."""
    path = Path(model_dir) / ADAPTER_COPY
    if not path.is_file():
        return {}
    info, tensors = load_adapter(path)
    terms = {}
    with torch.no_grad():
        for name, (a, b) in adapter_pairs(tensors).items():
            try:
                weight = model.get_submodule(name).weight
            except AttributeError:
                raise AdapterError(f"{path}: layer {name} is not in the model") from None
            if weight.dtype != torch.float32:
                raise AdapterError(
                    f"splitting an adapter needs float32 weights, got {weight.dtype}"
                )
            up = b.float() * info.scale
            weight.sub_(up @ a.float())  # fp32: far below a 4-bit step from the float64 merge
            terms[name] = (a.float(), up)
    return terms


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
