"""Write a model directory with the embedded model's shape and random weights, for the device check.

The GPU machine reaches no package index, and the embedded model (98 MB) does
not fit in what travels to it, so ``scripts/gpu_check.sh`` benchmarks a
SmolLM2-135M-shaped Llama with random weights instead: every kernel and shape
is the real model's, so speeds (plain, graphs, eager, transformers) are
meaningful; tau and the speedups of speculation are not (the drafter is random
too). The tokenizer and ``config.json`` come from a folder written on a
developer machine by ``scripts/gpu_prepare.sh`` (the embedded model's own).

Usage: ``python3 scripts/gpu_model.py SOURCE_DIR OUT_DIR [LAYERS]`` (SOURCE_DIR holds config.json
and the tokenizer files, each possibly as NAME.xz; OUT_DIR gets them and model.safetensors in
Hugging Face names; LAYERS: fewer decoder layers, for a quick try on a CPU).
Not here: the check itself (``scripts/gpu_check.sh``).
"""

from __future__ import annotations

import json
import lzma
import shutil
import sys
from pathlib import Path

import torch

# embedding (and tied head) scale: logits with a spread like a trained model's, so greedy
# choices are rarely near-ties (N(0, 0.02) embeddings give logits within ~0.5 of each other
# over 49152 tokens)
EMBED_STD = 0.2
LINEAR_STD = 0.02
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "chat_template.jinja",
    "special_tokens_map.json",
    "generation_config.json",
)


def random_state(cfg: dict, seed: int = 0) -> dict[str, torch.Tensor]:
    """Hugging Face Llama tensor names -> random bf16 weights for ``cfg`` (config.json)."""
    gen = torch.Generator().manual_seed(seed)
    hidden, inter, heads = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_attention_heads"]
    kv, dim = cfg["num_key_value_heads"], cfg.get("head_dim") or hidden // heads

    def normal(*shape, std=LINEAR_STD):
        return (torch.randn(*shape, generator=gen) * std).to(torch.bfloat16)

    state = {
        "model.embed_tokens.weight": normal(cfg["vocab_size"], hidden, std=EMBED_STD),
        "model.norm.weight": torch.ones(hidden, dtype=torch.bfloat16),
    }
    if not cfg.get("tie_word_embeddings", False):
        state["lm_head.weight"] = normal(cfg["vocab_size"], hidden, std=EMBED_STD)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        state |= {
            p + "self_attn.q_proj.weight": normal(heads * dim, hidden),
            p + "self_attn.k_proj.weight": normal(kv * dim, hidden),
            p + "self_attn.v_proj.weight": normal(kv * dim, hidden),
            p + "self_attn.o_proj.weight": normal(hidden, heads * dim),
            p + "mlp.gate_proj.weight": normal(inter, hidden),
            p + "mlp.up_proj.weight": normal(inter, hidden),
            p + "mlp.down_proj.weight": normal(hidden, inter),
            p + "input_layernorm.weight": torch.ones(hidden, dtype=torch.bfloat16),
            p + "post_attention_layernorm.weight": torch.ones(hidden, dtype=torch.bfloat16),
        }
    return state


def write_model(source: Path, out: Path, layers: int | None = None) -> Path:
    """``out`` with ``source``'s config (``layers`` decoder layers if given) and tokenizer, random
    weights."""
    from safetensors.torch import save_file

    cfg = json.loads((source / "config.json").read_text())
    if layers is not None:
        cfg["num_hidden_layers"] = layers
    cfg["torch_dtype"] = "bfloat16"
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    for name in TOKENIZER_FILES:
        if (source / name).is_file():
            shutil.copy(source / name, out / name)
        elif (source / f"{name}.xz").is_file():  # packed to travel (scripts/gpu_prepare.sh)
            (out / name).write_bytes(lzma.decompress((source / f"{name}.xz").read_bytes()))
    save_file(random_state(cfg), str(out / "model.safetensors"), metadata={"format": "pt"})
    return out


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    write_model(
        Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) == 4 else None
    )
    print(sys.argv[2])
