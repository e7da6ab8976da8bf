"""Drafter checkpoints on disk, in the public EAGLE-3 layout (what SGLang and vLLM load).

A checkpoint directory holds ``config.json`` (``LlamaForCausalLMEagle3`` fields
plus our extras under the ``"promptx"`` key) and ``model.safetensors`` with the
public tensor names (``fc.weight``, ``midlayer.*``, ``norm.weight``, and
``lm_head.weight``/``d2t``/``t2d`` when the drafter owns its head) plus our
extra tensors ``promptx.chunk_norms.{0,1,2}.weight`` and
``promptx.lowrank_{down,up}``. Embeddings are never stored. ``load_drafter``
also reads plain EAGLE-3 checkpoints. ``target_fingerprint`` identifies the
target a drafter was trained against.

Not here: the network (``engine.speculative.drafter``), training, downloading.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from .drafter import Drafter, DrafterConfig, DrafterMismatchError

CONFIG_FILE, WEIGHTS_FILE = "config.json", "model.safetensors"
_EXTRA_PREFIXES = {
    "chunk_norms.": "promptx.chunk_norms.",
    "lowrank_down": "promptx.lowrank_down",
    "lowrank_up": "promptx.lowrank_up",
}
_IGNORED_TENSORS = {"embed_tokens.weight"}  # some public checkpoints carry the target's embedding
_PUBLIC_FIELDS = (
    "hidden_size",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "intermediate_size",
    "vocab_size",
    "draft_vocab_size",
    "target_hidden_size",
    "rms_norm_eps",
    "rope_theta",
    "max_position_embeddings",
)
_PROMPTX_FIELDS = (
    "window",
    "chunk_norms",
    "lowrank_rank",
    "lowrank_candidates",
    "target_fingerprint",
)
_FINGERPRINT_FIELDS = (
    "model_type",
    "vocab_size",
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "rope_theta",
)

__all__ = [
    "DrafterLoadError",
    "DrafterMismatchError",
    "save_drafter",
    "load_drafter",
    "target_fingerprint",
]


class DrafterLoadError(ValueError):
    """A drafter checkpoint is missing, malformed or incomplete."""


def _file_name(key: str) -> str:
    for ours, theirs in _EXTRA_PREFIXES.items():
        if key.startswith(ours):
            return theirs + key[len(ours) :]
    return key


def target_fingerprint(model) -> str:
    """16 hex digits over the target's architecture fields and a strided sample of its embedding.

    The sample is hashed after rounding to bf16, so fp32 and bf16 loads of the same
    weights agree (fp16 loads or other quantizations of the model do not).
    """
    cfg = {name: getattr(model.config, name) for name in _FINGERPRINT_FIELDS}
    weight = model.embed_tokens.weight.detach()
    flat = weight.reshape(-1)
    sample = flat[:: max(1, flat.numel() // 4096)].to("cpu", torch.bfloat16).contiguous()
    digest = hashlib.sha256(json.dumps(cfg, sort_keys=True).encode())
    digest.update(repr(tuple(weight.shape)).encode())
    digest.update(sample.view(torch.int16).numpy().tobytes())
    return digest.hexdigest()[:16]


def save_drafter(drafter: Drafter, directory: str | Path, *, target=None) -> Path:
    """Write config.json + model.safetensors; ``target`` stamps its fingerprint into the config."""
    config = drafter.config
    if target is not None:
        config = replace(config, target_fingerprint=target_fingerprint(target))
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    raw = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "num_hidden_layers": 1,
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "torch_dtype": str(drafter.fc.weight.dtype).removeprefix("torch."),
        **{name: getattr(config, name) for name in _PUBLIC_FIELDS},
        "promptx": {name: getattr(config, name) for name in _PROMPTX_FIELDS},
    }
    tensors = {
        _file_name(k): v.detach().to("cpu").contiguous() for k, v in drafter.state_dict().items()
    }
    save_file(tensors, str(directory / WEIGHTS_FILE), metadata={"format": "pt"})
    (directory / CONFIG_FILE).write_text(json.dumps(raw, indent=2) + "\n")
    return directory


def read_fingerprint(directory: str | Path) -> str | None:
    """The target fingerprint a drafter checkpoint records, or None (plain EAGLE-3, unreadable)."""
    try:
        raw = json.loads((Path(directory) / "config.json").read_text())
    except (OSError, json.JSONDecodeError):
        return None
    extras = raw.get("promptx") if isinstance(raw, dict) else None
    return extras.get("target_fingerprint") if isinstance(extras, dict) else None


def _read_config(path: Path) -> DrafterConfig:
    try:
        raw = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise DrafterLoadError(f"cannot read drafter config {path}: {exc}") from None
    if not isinstance(raw, dict):
        raise DrafterLoadError(f"drafter config {path} is not a JSON object")
    archs = raw.get("architectures") or []
    if archs and not any("eagle3" in str(a).lower() for a in archs):
        raise DrafterLoadError(f"{path}: architectures {archs} is not an EAGLE-3 drafter")
    if int(raw.get("num_hidden_layers", 1)) != 1:
        raise DrafterLoadError(
            f"{path}: only one-layer drafters are supported, not {raw['num_hidden_layers']}"
        )
    scaling = raw.get("rope_scaling")
    if scaling and not isinstance(scaling, dict):
        raise DrafterLoadError(f"{path}: rope_scaling {scaling!r} is not an object")
    if scaling and (scaling.get("rope_type") or scaling.get("type")) not in (None, "default"):
        raise DrafterLoadError(f"{path}: rope_scaling {scaling} is not supported")
    extras = raw.get("promptx") or {}
    try:
        hidden, heads = int(raw["hidden_size"]), int(raw["num_attention_heads"])
        vocab = int(raw["vocab_size"])
        rope = raw.get("rope_theta") or (raw.get("rope_parameters") or {}).get(
            "rope_theta", 10000.0
        )
        window, rank = extras.get("window"), extras.get("lowrank_rank")
        return DrafterConfig(
            hidden_size=hidden,
            num_attention_heads=heads,
            num_key_value_heads=int(raw.get("num_key_value_heads") or heads),
            head_dim=int(raw.get("head_dim") or hidden // heads),
            intermediate_size=int(raw["intermediate_size"]),
            vocab_size=vocab,
            draft_vocab_size=int(raw.get("draft_vocab_size") or vocab),
            target_hidden_size=int(raw.get("target_hidden_size") or hidden),
            rms_norm_eps=float(raw.get("rms_norm_eps", 1e-6)),
            rope_theta=float(rope),
            max_position_embeddings=int(raw.get("max_position_embeddings", 2048)),
            window=None if window is None else int(window),
            chunk_norms=bool(extras.get("chunk_norms", False)),
            lowrank_rank=None if rank is None else int(rank),
            lowrank_candidates=int(extras.get("lowrank_candidates", 64)),
            target_fingerprint=extras.get("target_fingerprint"),
        )
    except KeyError as exc:
        raise DrafterLoadError(f"drafter config {path} lacks the field {exc.args[0]!r}") from None
    except (TypeError, ValueError) as exc:
        raise DrafterLoadError(f"drafter config {path} is invalid: {exc}") from None


def load_drafter(
    directory: str | Path, target=None, *, dtype: torch.dtype = torch.float32
) -> Drafter:
    """Read our or a plain EAGLE-3 checkpoint; with ``target``, check it fits and attach it."""
    directory = Path(directory)
    if not directory.is_dir():
        raise DrafterLoadError(f"drafter checkpoint directory {directory} does not exist")
    for name in (CONFIG_FILE, WEIGHTS_FILE):
        if not (directory / name).is_file():
            raise DrafterLoadError(f"drafter checkpoint {directory} has no {name}")
    config = _read_config(directory / CONFIG_FILE)
    try:
        tensors = load_file(str(directory / WEIGHTS_FILE))
    except (SafetensorError, OSError) as exc:
        raise DrafterLoadError(f"cannot read {directory / WEIGHTS_FILE}: {exc}") from None

    own_head = "lm_head.weight" in tensors
    if config.draft_vocab_size < config.vocab_size and not own_head:
        raise DrafterLoadError(
            f"{directory}: draft_vocab_size {config.draft_vocab_size} < vocab_size "
            f"{config.vocab_size} but the checkpoint has no lm_head.weight"
        )
    try:
        drafter = Drafter(config, own_head=own_head, dtype=dtype)
    except ValueError as exc:
        raise DrafterLoadError(f"{directory}: {exc}") from None
    expected = {_file_name(k): k for k in drafter.state_dict()}
    if (
        own_head and config.draft_vocab_size == config.vocab_size
    ):  # full-vocab own head: map optional
        tensors.setdefault("d2t", torch.zeros(config.draft_vocab_size, dtype=torch.long))
    if "d2t" in tensors and "t2d" in expected:
        tensors.setdefault("t2d", _t2d_of(tensors["d2t"], config.vocab_size))
    missing = sorted(set(expected) - set(tensors))
    if missing:
        raise DrafterLoadError(
            f"drafter checkpoint {directory} lacks tensors: {', '.join(missing)}"
        )
    unexpected = sorted(set(tensors) - set(expected) - _IGNORED_TENSORS)
    if unexpected:
        raise DrafterLoadError(
            f"drafter checkpoint {directory} has unsupported tensors: {', '.join(unexpected)}"
        )
    state, refs = {}, drafter.state_dict()
    for file_key, key in expected.items():
        ref, value = refs[key], tensors[file_key]
        if tuple(value.shape) != tuple(ref.shape):
            raise DrafterLoadError(
                f"{directory}: tensor {file_key} has shape {tuple(value.shape)}, "
                f"config implies {tuple(ref.shape)}"
            )
        state[key] = value.to(ref.dtype)
    drafter.load_state_dict(state, strict=True)
    drafter.check_vocab_map()
    if drafter.t2d is not None and not torch.equal(
        drafter.t2d, _t2d_of(drafter.d2t, config.vocab_size)
    ):
        raise DrafterLoadError(f"{directory}: t2d does not mark exactly the target ids of d2t")
    if target is not None:
        drafter.attach(target)  # sizes first: their message says more than a fingerprint
        found, want = config.target_fingerprint, target_fingerprint(target)
        if found is not None and found != want:
            raise DrafterMismatchError(
                f"drafter checkpoint {directory} was made for the target with "
                f"fingerprint {found}; the given target has fingerprint {want}"
            )
    return drafter


def _t2d_of(d2t: torch.Tensor, vocab: int) -> torch.Tensor:
    ids = torch.arange(len(d2t)) + d2t.long()
    if int(ids.min()) < 0 or int(ids.max()) >= vocab:
        raise DrafterMismatchError(
            f"d2t maps draft ids to target ids in [{int(ids.min())}, {int(ids.max())}], "
            f"outside the target vocabulary 0..{vocab - 1}"
        )
    t2d = torch.zeros(vocab, dtype=torch.bool)
    t2d[ids] = True
    if int(t2d.sum()) != len(ids):
        raise DrafterLoadError("d2t maps two draft ids to the same target id")
    return t2d
