"""The runtime on tiny random Llama, Mistral, Qwen2 (qkv bias) and Qwen3 (q/k norm) models.

transformers builds and saves each model; our loader reads the directory and
the fp32 logits must match transformers' own forward.
"""

from __future__ import annotations

import pytest
import torch

from engine.weights.loading import load_transformer

COMMON = dict(
    vocab_size=96,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=6,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=128,
    rms_norm_eps=1e-6,
)


def build(kind: str, directory):
    import transformers

    configs = {
        "llama": lambda: transformers.LlamaConfig(**COMMON, tie_word_embeddings=False),
        "mistral": lambda: transformers.MistralConfig(**COMMON, sliding_window=None),
        "qwen2": lambda: transformers.Qwen2Config(**COMMON),
        "qwen3": lambda: transformers.Qwen3Config(**COMMON, head_dim=16),
    }
    torch.manual_seed(0)
    config = configs[kind]()
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    if kind == "qwen2":  # make the qkv biases matter
        for layer in model.model.layers:
            for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj):
                torch.nn.init.normal_(proj.bias, std=0.5)
    model.save_pretrained(directory)
    return model


@pytest.mark.parametrize("kind", ["llama", "mistral", "qwen2", "qwen3"])
def test_logits_match_transformers(kind, tmp_path):
    reference = build(kind, tmp_path)
    ours = load_transformer(tmp_path, torch.float32)
    tokens = torch.randint(
        0, COMMON["vocab_size"], (1, 20), generator=torch.Generator().manual_seed(1)
    )
    with torch.no_grad():
        expected = reference(tokens).logits
    got = ours(tokens, ours.new_cache(64)).logits
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)
