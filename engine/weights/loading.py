"""Load a target model from a Hugging Face style directory into
``engine.runtime.model.Transformer``.

Reads ``config.json`` and the ``*.safetensors`` shards, fuses q/k/v and
gate/up projections into single matmuls, and casts to the requested dtype.
GGUF files are first converted to such a directory by ``engine.weights.gguf_convert``
(the caller decides where that directory lives).

Not here: choosing a cache location or a default model (that is promptx's job).
"""

from __future__ import annotations

import math
from pathlib import Path

import torch

from ..runtime.config import ModelConfig
from ..runtime.model import Transformer
from .state_dict import ModelLoadError, read_state_dict  # noqa: F401 - ModelLoadError: also imported from here
from .tokenizer import ChatTokenizer


def _take(state: dict[str, torch.Tensor], name: str) -> torch.Tensor:
    try:
        return state.pop(name)
    except KeyError:
        raise ModelLoadError(f"weights lack the tensor {name!r}") from None


def fuse_state_dict(state: dict[str, torch.Tensor], cfg: ModelConfig) -> dict[str, torch.Tensor]:
    """Hugging Face tensor names -> this runtime's names (fused q/k/v and gate/up)."""
    state = {k.removeprefix("model."): v for k, v in state.items()}
    out: dict[str, torch.Tensor] = {}
    for i in range(cfg.num_hidden_layers):
        p = f"layers.{i}."
        attn = p + "self_attn."
        out[attn + "qkv_proj.weight"] = torch.cat(
            [_take(state, attn + f"{n}_proj.weight") for n in "qkv"]
        )
        if cfg.attention_bias:
            out[attn + "qkv_proj.bias"] = torch.cat(
                [_take(state, attn + f"{n}_proj.bias") for n in "qkv"]
            )
        out[attn + "o_proj.weight"] = _take(state, attn + "o_proj.weight")
        if cfg.qk_norm:
            out[attn + "q_norm.weight"] = _take(state, attn + "q_norm.weight")
            out[attn + "k_norm.weight"] = _take(state, attn + "k_norm.weight")
        mlp = p + "mlp."
        out[mlp + "gate_up_proj.weight"] = torch.cat(
            [_take(state, mlp + "gate_proj.weight"), _take(state, mlp + "up_proj.weight")]
        )
        out[mlp + "down_proj.weight"] = _take(state, mlp + "down_proj.weight")
        for norm in ("input_layernorm", "post_attention_layernorm"):
            out[p + norm + ".weight"] = _take(state, p + norm + ".weight")
    out["embed_tokens.weight"] = _take(state, "embed_tokens.weight")
    out["norm.weight"] = _take(state, "norm.weight")
    if cfg.tie_word_embeddings:
        state.pop("lm_head.weight", None)
    else:
        out["lm_head.weight"] = _take(state, "lm_head.weight")
    return out


def load_transformer(
    model_dir: str | Path, dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu"
) -> Transformer:
    model_dir = Path(model_dir)
    config_path = model_dir / "config.json"
    if not config_path.is_file():
        raise ModelLoadError(
            f"{model_dir}: no config.json (is this a Hugging Face model directory?)"
        )
    cfg = ModelConfig.from_file(config_path)
    with torch.device("meta"):
        model = Transformer(cfg, dtype)
    weights = fuse_state_dict(read_state_dict(model_dir), cfg)
    weights = {k: v.to(dtype) if v.is_floating_point() else v for k, v in weights.items()}
    model.load_state_dict(weights, strict=False, assign=True)
    if cfg.tie_word_embeddings:
        model.lm_head.weight = model.embed_tokens.weight
    model.rope = type(model.rope)(cfg.head_dim, cfg.rope_theta, cfg.max_position_embeddings)
    missing = [n for n, p in model.named_parameters() if p.is_meta]
    if missing:
        raise ModelLoadError(f"{model_dir}: weights lack {missing[:3]}")
    # norms stay float32 for accuracy; matmul weights take ``dtype``
    for module in model.modules():
        if type(module).__name__ == "RMSNorm":
            module.weight.data = module.weight.data.float()
    return model.to(device).eval()


def load_int4(
    model_dir: str | Path, device: str | torch.device = "cpu", max_grid_distance: float = math.inf
) -> tuple[Transformer, ChatTokenizer, float] | None:
    """The model with 4-bit weights (``engine.runtime.int4``; a merged adapter taken back out and
    kept as low-rank terms), its tokenizer, and how far its weights moved (the largest grid
    distance of ``engine.runtime.int4.pack_int4``, in quantization steps: ~0 for a model that
    was 4-bit already); None when that is more than ``max_grid_distance``. Restored from
    ``engine.weights.int4_store`` when a previous process stored it; a refused model is not
    stored, only its distance, so it is refused next time without quantizing."""
    from ..runtime.int4 import quantize_int4
    from .adapters import split_adapter
    from .int4_store import load_stored_int4, save_int4, save_refusal, store_path, stored_refusal

    if torch.device(device).type != "cpu":
        raise ValueError("int4 runs on the CPU only; use bfloat16 on a GPU")
    path = store_path(model_dir, model_identity(model_dir))
    refused = stored_refusal(path)
    if refused is not None and refused > max_grid_distance:
        return None
    stored = load_stored_int4(model_dir, path) if path.is_file() else None
    if stored is not None:
        model, distance = stored
    else:
        model = load_transformer(model_dir, torch.float32, device)
        distance = quantize_int4(model, split_adapter(model, model_dir))
        if distance <= max_grid_distance:
            from safetensors import SafetensorError

            try:
                save_int4(model, distance, path)
            except (OSError, SafetensorError):
                pass  # a read-only or full cache: quantize again next time
    if distance > max_grid_distance:  # (a stored one: stored by an explicit int4 request)
        save_refusal(path, distance)
        return None
    return model, ChatTokenizer(model_dir), distance


def model_identity(model_dir: str | Path) -> str:
    """A string that changes when the model directory's weights change (path, sizes, mtimes)."""
    model_dir = Path(model_dir).resolve()
    files = sorted(model_dir.glob("*.safetensors")) + sorted(model_dir.glob("*.bin"))
    parts = [str(model_dir)] + [
        f"{f.name}:{f.stat().st_size}:{f.stat().st_mtime_ns}" for f in files
    ]
    return "|".join(parts)


def load_model(
    model_dir: str | Path, dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu"
) -> tuple[Transformer, ChatTokenizer]:
    """The network and its tokenizer from one directory."""
    return load_transformer(model_dir, dtype, device), ChatTokenizer(model_dir)
