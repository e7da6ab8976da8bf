"""Convert a llama.cpp GGUF file into a Hugging Face style model directory.

Dequantizes every tensor to float32 with the ``gguf`` package, undoes
llama.cpp's row permutation of the q/k projections, renames tensors to the
Hugging Face Llama layout and writes ``config.json``, ``model.safetensors``
and the tokenizer files. Runs once; ``engine.weights.loading`` then loads the
directory in about a second.

Not here: any caching policy (the caller picks the output directory).
Supports the llama architecture (Llama, SmolLM, Mistral-style GGUFs).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

GGUF_TO_HF = {
    "token_embd": "model.embed_tokens",
    "output_norm": "model.norm",
    "output": "lm_head",
    "attn_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}


class GGUFConversionError(ValueError):
    """The GGUF file cannot be read or describes an unsupported model."""


def hf_tensor_name(gguf_name: str) -> str:
    stem, _, suffix = gguf_name.rpartition(".")
    if stem.startswith("blk."):
        _, index, part = stem.split(".", 2)
        return f"model.layers.{index}.{GGUF_TO_HF[part]}.{suffix}"
    return f"{GGUF_TO_HF[stem]}.{suffix}"


def unpermute_rows(weight: np.ndarray, heads: int) -> np.ndarray:
    """Undo llama.cpp's rotary row interleave of a q or k projection [out, in]."""
    out = weight.shape[0]
    return (
        weight.reshape(heads, out // heads // 2, 2, *weight.shape[1:])
        .swapaxes(1, 2)
        .reshape(weight.shape)
    )


def _field(reader, key: str, default=None):
    field = reader.fields.get(key)
    return default if field is None else field.contents()


def read_config(reader) -> dict:
    arch = _field(reader, "general.architecture")
    if arch != "llama":
        raise GGUFConversionError(f"GGUF architecture {arch!r} is not supported (only 'llama')")
    get = lambda key, default=None: _field(reader, f"llama.{key}", default)  # noqa: E731
    heads = int(get("attention.head_count"))
    hidden = int(get("embedding_length"))
    has_output = any(t.name == "output.weight" for t in reader.tensors)
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": int(get("vocab_size") or len(reader.fields["tokenizer.ggml.tokens"].data)),
        "hidden_size": hidden,
        "intermediate_size": int(get("feed_forward_length")),
        "num_hidden_layers": int(get("block_count")),
        "num_attention_heads": heads,
        "num_key_value_heads": int(get("attention.head_count_kv", heads)),
        "head_dim": int(get("rope.dimension_count", hidden // heads)),
        "max_position_embeddings": int(get("context_length", 2048)),
        "rms_norm_eps": float(get("attention.layer_norm_rms_epsilon", 1e-5)),
        "rope_theta": float(get("rope.freq_base", 10000.0)),
        "tie_word_embeddings": not has_output,
        "bos_token_id": _field(reader, "tokenizer.ggml.bos_token_id"),
        "eos_token_id": _field(reader, "tokenizer.ggml.eos_token_id"),
        "torch_dtype": "float32",
    }


def read_tensors(reader, config: dict) -> dict[str, np.ndarray]:
    from gguf.quants import dequantize

    tensors = {}
    for tensor in reader.tensors:
        name = hf_tensor_name(tensor.name)
        array = dequantize(tensor.data, tensor.tensor_type).astype(np.float32, copy=False)
        array = array.reshape([int(d) for d in reversed(tensor.shape)])
        if name.endswith("q_proj.weight"):
            array = unpermute_rows(array, config["num_attention_heads"])
        elif name.endswith("k_proj.weight"):
            array = unpermute_rows(array, config["num_key_value_heads"])
        tensors[name] = np.ascontiguousarray(array)
    return tensors


def write_tokenizer(gguf_path: Path, out_dir: Path) -> None:
    """Build tokenizer.json and the chat template from the GGUF metadata (uses transformers)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    tokenizer.save_pretrained(str(out_dir))


def convert_gguf(gguf_path: str | Path, out_dir: str | Path) -> Path:
    """Write a Hugging Face style directory for ``gguf_path`` into ``out_dir``; return it."""
    import gguf
    import torch
    from safetensors.torch import save_file

    gguf_path, out_dir = Path(gguf_path), Path(out_dir)
    try:
        reader = gguf.GGUFReader(str(gguf_path))
    except Exception as exc:  # the gguf package raises bare ValueErrors and more
        raise GGUFConversionError(f"{gguf_path}: not a readable GGUF file ({exc})") from exc
    config = read_config(reader)
    tensors = read_tensors(reader, config)
    out_dir.mkdir(parents=True, exist_ok=True)
    save_file(
        {k: torch.from_numpy(v.copy()) for k, v in tensors.items()},
        str(out_dir / "model.safetensors"),
    )
    write_tokenizer(gguf_path, out_dir)
    (out_dir / "config.json").write_text(json.dumps(config, indent=2))
    return out_dir
