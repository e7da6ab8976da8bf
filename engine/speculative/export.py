"""Drafters in the layouts serving engines load, and back: ``eagle3`` and ``speculators``.

``eagle3`` is the flat layout of vLLM's ``llama_eagle3.py``, SGLang's
``LlamaForCausalLMEagle3`` and llama.cpp's converter: a Llama config.json with
``draft_vocab_size``, ``target_hidden_size``, ``norm_before_residual`` and
``eagle_config``; tensors ``fc.weight``, ``midlayer.*``, ``norm.weight``,
``lm_head.weight`` [draft_vocab, H], ``d2t`` (int64, target id = i + d2t[i])
and ``t2d``. ``speculators`` is vLLM's newer layout: the same tensors with
``layers.0.*`` for ``midlayer.*``, the Llama config nested under
``transformer_layer_config`` next to ``speculators_config``.

What promptx's drafter has beyond a plain EAGLE-3 midlayer, and how it is written:

- per-chunk norms before fc (EAGLE-3.1): ``fc_norm: true`` + ``fc_norm.{0,1,2}.weight``,
  the names and flag of the EAGLE-3.1 drafters current vLLM and SGLang load;
- sliding window W: ``layer_types: ["sliding_attention"]`` + ``sliding_window: W``,
  read by vLLM's Llama attention (key visible iff key_pos > query_pos - W, as here);
- low-rank candidate head (EAGLE-4): not written; the engines score every draft
  token with the exact head, which is written and is what the factors approximate;
- the target's head (full vocabulary, no own head): copied in as ``lm_head.weight``
  with an identity ``d2t``.

Refused (``ExportError``): a drafter whose hidden size differs from the target's
(engines feed it the target's embedding), a head that cannot be had, a broken
vocabulary map, and checkpoints that name tap layers other than the default
(2, N//2, N-3): the files keep no tap ids, because vLLM reads explicit ids as
layer inputs and SGLang as layer outputs (it adds one); the defaults agree.
``notes`` says, per drafter, where an engine may read the export differently.

Not here: promptx's own checkpoint layout (``checkpoint``), the target model's
files, launch commands, the command line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from .drafter import Drafter, DrafterConfig

FORMATS = ("eagle3", "speculators")
CONFIG_FILE, WEIGHTS_FILE = "config.json", "model.safetensors"
_LAYER_PREFIX = {"eagle3": "midlayer.", "speculators": "layers.0."}
_TAP_KEYS = ("eagle_aux_hidden_state_layer_ids", "aux_hidden_state_layer_ids", "target_layer_ids")
_IGNORED_TENSORS = {"embed_tokens.weight"}  # some checkpoints carry the target's embedding

__all__ = [
    "FORMATS",
    "ExportError",
    "ExportResult",
    "check_declared_taps",
    "default_taps",
    "export_config",
    "export_drafter",
    "export_tensors",
    "import_eagle3",
    "notes",
]


class ExportError(ValueError):
    """The drafter cannot be written faithfully in the layout, or a directory is not a readable
    export."""


@dataclass(frozen=True)
class ExportResult:
    directory: Path
    format: str
    files: tuple[str, ...]
    notes: tuple[str, ...] = field(default=())


# ---- what can be written ------------------------------------------------------------------------
def default_taps(num_target_layers: int) -> tuple[int, int, int]:
    """The layers whose input residual stream promptx (and vLLM, SGLang by default) feed the
    drafter."""
    n = num_target_layers
    return (2, n // 2, n - 3)


def _declared_taps(raw: dict) -> list | None:
    for holder in (raw, raw.get("eagle_config") or {}, raw.get("transformer_layer_config") or {}):
        for key in _TAP_KEYS:
            if isinstance(holder, dict) and holder.get(key):
                return list(holder[key])
    return None


def check_declared_taps(raw_config: dict, num_target_layers: int) -> None:
    """Refuse a checkpoint config that names tap layers other than the default ones.

    promptx always taps the inputs of layers (2, N//2, N-3); an export omits the ids so
    that vLLM and SGLang both use those defaults (their explicit ids differ by one).
    """
    declared = _declared_taps(raw_config)
    want = list(default_taps(num_target_layers))
    if declared is not None and declared != want:
        raise ExportError(
            f"the checkpoint names tap layers {declared}; promptx taps the inputs of layers {want} "
            f"of this {num_target_layers}-layer target, and the export cannot name others without "
            "vLLM and SGLang reading them one layer apart"
        )


def _check_vocab_map(d2t: torch.Tensor, vocab: int) -> None:
    ids = torch.arange(len(d2t)) + d2t.long()
    if len(ids) and (int(ids.min()) < 0 or int(ids.max()) >= vocab):
        raise ExportError(
            f"d2t maps draft ids to target ids in [{int(ids.min())}, {int(ids.max())}], "
            f"outside the target vocabulary 0..{vocab - 1}"
        )
    if ids.unique().numel() != ids.numel():
        raise ExportError("d2t maps two draft ids to the same target id")


def _head(drafter: Drafter, target) -> torch.Tensor:
    """[draft_vocab, H]: the drafter's own head, else the target's."""
    if drafter.lm_head is not None:
        return drafter.lm_head.weight
    if drafter.attached:
        return drafter.head_weight
    if target is not None:
        return target.lm_head.weight
    raise ExportError(
        "the drafter shares the target's head: pass the target (or attach it) to export it"
    )


def _check(drafter: Drafter, target) -> None:
    c = drafter.config
    if c.hidden_size != c.target_hidden_size:
        raise ExportError(
            f"drafter hidden size {c.hidden_size} differs from the target's "
            f"{c.target_hidden_size}: the engines feed the drafter the target's token embedding, "
            "which must be as wide"
        )
    if target is not None:
        for name, mine, theirs in (
            ("vocabulary", c.vocab_size, target.config.vocab_size),
            ("tap width (target_hidden_size)", c.target_hidden_size, target.config.hidden_size),
        ):
            if mine != theirs:
                raise ExportError(f"drafter {name} {mine} differs from the target's {theirs}")
    head = _head(drafter, target)
    if tuple(head.shape) != (c.draft_vocab_size, c.hidden_size):
        raise ExportError(
            f"head of shape {tuple(head.shape)}, expected {(c.draft_vocab_size, c.hidden_size)}"
        )
    if drafter.d2t is not None:
        _check_vocab_map(drafter.d2t.cpu(), c.vocab_size)


def notes(drafter: Drafter, fmt: str = "eagle3") -> list[str]:
    """Where engines may read this drafter's export differently from promptx (empty: nowhere
    known)."""
    c, out = drafter.config, []
    if c.chunk_norms:
        out.append(
            "EAGLE-3.1 per-chunk norms are written as fc_norm: true + fc_norm.{0,1,2}.weight: "
            "vLLM and SGLang releases with EAGLE-3.1 (fc_norm) support load them; older vLLM "
            "stops with a KeyError on fc_norm.0.weight, older SGLang skips the tensors silently "
            "(worse drafts, same output), and llama.cpp's converter may reject them"
        )
    if c.window is not None:
        out.append(
            f"sliding window {c.window}: declared as layer_types "
            '["sliding_attention"] + sliding_window '
            f"{c.window}, which vLLM's Llama attention reads; SGLang's EAGLE-3 drafter ignores "
            "them (recent SGLang has --speculative-draft-window-size, not checked here) and "
            "llama.cpp's was not checked: full attention there changes the drafts past "
            f"{c.window} tokens of context (acceptance), never the verified output"
        )
    if c.lowrank_rank is not None:
        out.append(
            f"the rank-{c.lowrank_rank} low-rank candidate head is not written: the engines "
            "score every draft token with the exact head (lm_head.weight, written), which the "
            "low-rank head approximates"
        )
    if drafter.lm_head is None:
        out.append(
            "full vocabulary: lm_head.weight is a copy of the target's head and d2t is the identity"
        )
    if fmt == "speculators":
        out.append(
            "speculators is vLLM's layout; SGLang and llama.cpp read the flat eagle3 one "
            "(--format eagle3)"
        )
    return out


# ---- writing ------------------------------------------------------------------------------------
def _dtype_name(drafter: Drafter) -> str:
    return str(drafter.fc.weight.dtype).removeprefix("torch.")


def _layer_config(drafter: Drafter) -> dict:
    """The Llama fields of the one decoder layer (flat in eagle3, nested in speculators)."""
    c = drafter.config
    layer = {
        "model_type": "llama",
        "hidden_size": c.hidden_size,
        "intermediate_size": c.intermediate_size,
        "num_attention_heads": c.num_attention_heads,
        "num_key_value_heads": c.num_key_value_heads,
        "head_dim": c.head_dim,
        "num_hidden_layers": 1,
        "hidden_act": "silu",
        "rms_norm_eps": c.rms_norm_eps,
        "rope_theta": c.rope_theta,
        "rope_scaling": None,
        "max_position_embeddings": c.max_position_embeddings,
        "vocab_size": c.vocab_size,
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": False,
        "torch_dtype": _dtype_name(drafter),
    }
    if c.window is not None:
        layer.update(layer_types=["sliding_attention"], sliding_window=c.window)
    if c.chunk_norms:
        layer["fc_norm"] = True  # the speculators path builds the model from this dict
    return layer


def _eagle_fields(drafter: Drafter) -> dict:
    c = drafter.config
    return {
        "draft_vocab_size": c.draft_vocab_size,
        "target_hidden_size": c.target_hidden_size,
        "norm_before_residual": False,
        "norm_before_fc": False,
        "fc_norm": c.chunk_norms,
        "norm_output": False,
    }


def export_config(
    drafter: Drafter,
    fmt: str = "eagle3",
    *,
    verifier_name: str = "TARGET",
    verifier_architectures: Sequence[str] = ("LlamaForCausalLM",),
    speculative_tokens: int = 3,
    fingerprint: str | None = None,
) -> dict:
    """config.json of the export (the verifier fields and speculative_tokens matter to speculators
    only)."""
    provenance = {
        "format": fmt,
        "target_fingerprint": fingerprint or drafter.config.target_fingerprint,
    }
    if fmt == "eagle3":
        return {
            "architectures": ["LlamaForCausalLMEagle3"],
            **_layer_config(drafter),
            **_eagle_fields(drafter),
            "eagle_config": {"use_aux_hidden_state": True},
            "promptx_export": provenance,
        }
    if fmt == "speculators":
        method = {
            "proposal_type": "greedy",
            "speculative_tokens": speculative_tokens,
            "verifier_accept_k": 1,
            "accept_tolerance": 0.0,
        }
        return {
            "architectures": ["Eagle3Speculator"],
            "speculators_model_type": "eagle3",
            "transformer_layer_config": _layer_config(drafter),
            **_eagle_fields(drafter),
            "torch_dtype": _dtype_name(drafter),
            "speculators_config": {
                "algorithm": "eagle3",
                "default_proposal_method": "greedy",
                "proposal_methods": [method],
                "verifier": {
                    "name_or_path": verifier_name,
                    "architectures": list(verifier_architectures),
                },
            },
            "promptx_export": provenance,
        }
    raise ExportError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")


def _public_name(key: str, fmt: str) -> str:
    """The export's name of a Drafter state_dict key."""
    if key.startswith("midlayer."):
        return _LAYER_PREFIX[fmt] + key.removeprefix("midlayer.")
    if key.startswith("chunk_norms."):
        return "fc_norm." + key.removeprefix("chunk_norms.")
    return key


def export_tensors(
    drafter: Drafter, fmt: str = "eagle3", *, target=None
) -> dict[str, torch.Tensor]:
    """The export's tensors, on the CPU in the drafter's dtype (d2t int64, t2d bool)."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    _check(drafter, target)
    c, dtype = drafter.config, drafter.fc.weight.dtype
    out = {
        _public_name(k, fmt): v
        for k, v in drafter.state_dict().items()
        if not k.startswith("lowrank_")
    }
    if drafter.lm_head is None:
        out["lm_head.weight"] = _head(drafter, target).to(dtype)
        out["d2t"] = torch.zeros(c.draft_vocab_size, dtype=torch.long)
        out["t2d"] = torch.ones(c.vocab_size, dtype=torch.bool)
    out["d2t"], out["t2d"] = out["d2t"].long(), out["t2d"].bool()
    return {k: v.detach().to("cpu").contiguous().clone() for k, v in out.items()}


def export_drafter(
    drafter: Drafter,
    directory: str | Path,
    fmt: str = "eagle3",
    *,
    target=None,
    verifier_name: str = "TARGET",
    verifier_architectures: Sequence[str] = ("LlamaForCausalLM",),
    speculative_tokens: int = 3,
) -> ExportResult:
    """Write config.json + model.safetensors of ``fmt`` into ``directory``."""
    fingerprint = None
    if target is not None:
        from .checkpoint import target_fingerprint

        fingerprint = target_fingerprint(target)
    tensors = export_tensors(drafter, fmt, target=target)
    config = export_config(
        drafter,
        fmt,
        verifier_name=verifier_name,
        verifier_architectures=verifier_architectures,
        speculative_tokens=speculative_tokens,
        fingerprint=fingerprint,
    )
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(directory / WEIGHTS_FILE), metadata={"format": "pt"})
    (directory / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n")
    return ExportResult(directory, fmt, (CONFIG_FILE, WEIGHTS_FILE), tuple(notes(drafter, fmt)))


# ---- reading back -------------------------------------------------------------------------------
def _read_layout(directory: Path) -> tuple[str, dict, dict]:
    """(format, top-level config, Llama layer config) of an export directory."""
    try:
        raw = json.loads((directory / CONFIG_FILE).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ExportError(f"cannot read {directory / CONFIG_FILE}: {exc}") from None
    if not isinstance(raw, dict):
        raise ExportError(f"{directory / CONFIG_FILE} is not a JSON object")
    if raw.get("speculators_model_type") is not None:
        if raw["speculators_model_type"] != "eagle3" or not isinstance(
            raw.get("transformer_layer_config"), dict
        ):
            raise ExportError(f"{directory}: not an eagle3 speculators checkpoint")
        return "speculators", raw, raw["transformer_layer_config"]
    if not any("eagle3" in str(a).lower() for a in raw.get("architectures") or []):
        raise ExportError(
            f"{directory}: architectures {raw.get('architectures')} is not an EAGLE-3 drafter"
        )
    return "eagle3", raw, raw


def _unsupported(top: dict, layer: dict) -> list[str]:
    scaling, eagle = layer.get("rope_scaling") or {}, top.get("eagle_config") or {}
    checks = [
        ("num_hidden_layers", int(layer.get("num_hidden_layers", 1)) != 1),
        ("norm_before_residual", bool(top.get("norm_before_residual", False))),
        ("norm_before_fc", bool(top.get("norm_before_fc", eagle.get("norm_before_fc")))),
        ("norm_output", bool(top.get("norm_output", False))),
        ("attention_bias", bool(layer.get("attention_bias", False))),
        ("mlp_bias", bool(layer.get("mlp_bias", False))),
        ("tie_word_embeddings", bool(layer.get("tie_word_embeddings", False))),
        ("hidden_act", layer.get("hidden_act", "silu") != "silu"),
        (
            "rope_scaling",
            (scaling.get("rope_type") or scaling.get("type")) not in (None, "default"),
        ),
        ("eagle_config.use_aux_hidden_state", not eagle.get("use_aux_hidden_state", True)),
    ]
    return [name for name, bad in checks if bad]


def _window(layer: dict) -> int | None:
    kinds, size = layer.get("layer_types"), layer.get("sliding_window")
    if kinds is None:
        if size is not None:
            raise ExportError(
                "sliding_window without layer_types: engines disagree on whether it applies"
            )
        return None
    if kinds == ["full_attention"]:
        return None
    if kinds != ["sliding_attention"] or not isinstance(size, int):
        raise ExportError(
            f"layer_types {kinds} with sliding_window {size!r} is not one sliding layer"
        )
    return size


def _drafter_config(top: dict, layer: dict) -> DrafterConfig:
    bad = _unsupported(top, layer)
    if bad:
        raise ExportError(f"promptx's drafter cannot run these settings: {', '.join(bad)}")
    try:
        hidden, heads, vocab = (
            int(layer["hidden_size"]),
            int(layer["num_attention_heads"]),
            int(layer["vocab_size"]),
        )
        rope = layer.get("rope_theta") or (layer.get("rope_parameters") or {}).get(
            "rope_theta", 10000.0
        )
        return DrafterConfig(
            hidden_size=hidden,
            num_attention_heads=heads,
            num_key_value_heads=int(layer.get("num_key_value_heads") or heads),
            head_dim=int(layer.get("head_dim") or hidden // heads),
            intermediate_size=int(layer["intermediate_size"]),
            vocab_size=vocab,
            draft_vocab_size=int(top.get("draft_vocab_size") or vocab),
            target_hidden_size=int(top.get("target_hidden_size") or hidden),
            rms_norm_eps=float(layer.get("rms_norm_eps", 1e-6)),
            rope_theta=float(rope),
            max_position_embeddings=int(layer.get("max_position_embeddings", 2048)),
            window=_window(layer),
            chunk_norms=bool(top.get("fc_norm") or layer.get("fc_norm")),
            target_fingerprint=(top.get("promptx_export") or {}).get("target_fingerprint"),
        )
    except KeyError as exc:
        raise ExportError(f"config lacks the field {exc.args[0]!r}") from None
    except (TypeError, ValueError) as exc:
        raise ExportError(f"config is invalid: {exc}") from None


def import_eagle3(
    directory: str | Path, target=None, *, dtype: torch.dtype = torch.float32
) -> Drafter:
    """A Drafter from an ``eagle3`` or ``speculators`` directory (promptx's exports and others'
    alike).

    With ``target``: declared tap layers must be the default ones, and the drafter is attached.
    """
    directory = Path(directory)
    fmt, top, layer = _read_layout(directory)
    if target is not None:
        check_declared_taps(top, target.config.num_hidden_layers)
    elif _declared_taps(top) is not None:
        raise ExportError(
            f"{directory} names tap layers {_declared_taps(top)}: pass the target to check them"
        )
    config = _drafter_config(top, layer)
    try:
        tensors = load_file(str(directory / WEIGHTS_FILE))
    except (SafetensorError, OSError) as exc:
        raise ExportError(f"cannot read {directory / WEIGHTS_FILE}: {exc}") from None
    drafter = Drafter(config, own_head=True, dtype=dtype)
    refs = drafter.state_dict()
    names = {_public_name(k, fmt): k for k in refs}
    tensors.setdefault("d2t", torch.zeros(config.draft_vocab_size, dtype=torch.long))
    _check_vocab_map(tensors["d2t"], config.vocab_size)
    t2d = torch.zeros(config.vocab_size, dtype=torch.bool)
    t2d[torch.arange(len(tensors["d2t"])) + tensors["d2t"].long()] = True
    if "t2d" in tensors and not torch.equal(tensors["t2d"].bool(), t2d):
        raise ExportError(f"{directory}: t2d does not mark exactly the target ids of d2t")
    tensors.setdefault("t2d", t2d)  # vLLM and SGLang never read it
    missing = sorted(set(names) - set(tensors))
    unexpected = sorted(set(tensors) - set(names) - _IGNORED_TENSORS)
    if missing or unexpected:
        raise ExportError(
            f"{directory}: "
            + "; ".join(
                part
                for part in (
                    missing and f"lacks {', '.join(missing)}",
                    unexpected and f"has unsupported {', '.join(unexpected)}",
                )
                if part
            )
        )
    state = {}
    for name, key in names.items():
        if tuple(tensors[name].shape) != tuple(refs[key].shape):
            raise ExportError(
                f"{directory}: {name} has shape {tuple(tensors[name].shape)}, "
                f"the config implies {tuple(refs[key].shape)}"
            )
        state[key] = tensors[name].to(refs[key].dtype)
    drafter.load_state_dict(state, strict=True)
    if target is not None:
        drafter.attach(target)
    return drafter
