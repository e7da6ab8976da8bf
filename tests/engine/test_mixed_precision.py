"""Mixed precision: fp32 for multi-token passes, bf16 for single-token steps; plain decoding
only."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from engine.decode.sampling import SamplingParams
from engine.decode.stats import DecodeStats
from engine.generator import Generator
from engine.runtime.device import MIXED, cpu_has_fast_bf16, fastest_dtype, parse_dtype
from engine.runtime.mixed_precision import MixedLinear, use_mixed_precision
from engine.runtime.model import Transformer
from tests.tiny import TINY_CONFIG, make_tiny_target


def test_multi_token_passes_stay_exactly_fp32_and_single_steps_use_bf16(one_thread):
    reference, mixed = make_tiny_target(), make_tiny_target()
    head = mixed.lm_head.weight
    use_mixed_precision(mixed)
    assert isinstance(mixed.layers[0].mlp.down_proj, MixedLinear)
    assert mixed.lm_head.weight is head  # the same parameter (ties survive)
    tokens = torch.randint(0, 128, (1, 7))
    ref_cache, mixed_cache = reference.new_cache(16), mixed.new_cache(16)
    ref_out = reference(tokens, ref_cache).logits
    mixed_out = mixed(tokens, mixed_cache).logits
    assert torch.equal(ref_out, mixed_out)  # 7 rows: the fp32 weights
    ref_cache.commit(7), mixed_cache.commit(7)
    step = torch.tensor([[5]])
    ref_step, mixed_step = reference(step, ref_cache).logits, mixed(step, mixed_cache).logits
    assert not torch.equal(ref_step, mixed_step)  # 1 row: the bf16 copy
    assert torch.allclose(ref_step, mixed_step, atol=0.1, rtol=0.05)


def test_only_float32_models_convert():
    model = make_tiny_target().to(torch.bfloat16)
    with pytest.raises(ValueError, match="float32"):
        use_mixed_precision(model)


def test_mixed_is_a_plain_only_precision():
    assert parse_dtype("mixed", "cpu") == MIXED
    assert parse_dtype("auto", "cpu") in (torch.float32, torch.bfloat16)  # auto stays exact
    assert fastest_dtype("cpu") == (MIXED if not cpu_has_fast_bf16() else "auto")


@pytest.mark.slow
def test_mixed_generator_decodes_plainly_with_prefix_reuse(model_dir, tmp_path):
    generator = Generator.from_dir(model_dir, dtype="mixed")
    assert not generator.can_speculate and generator.prefixes is not None
    assert generator.model.lm_head.weight is generator.model.embed_tokens.weight
    generator.prefixes.directory = tmp_path
    messages = [
        {"role": "system", "content": "You describe scenes in one sentence."},
        {"role": "user", "content": "a red kite over a beach"},
    ]
    ids = generator.tokenizer.encode_chat(messages)
    prefix_len = len(generator.tokenizer.encode_chat(messages[:1])) - 3
    params = SamplingParams(max_new_tokens=16)
    stats = DecodeStats()
    cold = generator.generate(ids, params, stats=stats, prefix_len=prefix_len)
    assert len(list(tmp_path.glob("*.safetensors"))) == 1
    warm = generator.generate(ids, params, prefix_len=prefix_len)
    assert 0 < len(cold) <= 16 and cold == warm and stats.accepted_lengths == []
    text = generator.tokenizer.decode(cold).lower()
    assert any(word in text for word in ("kite", "beach", "sky", "sand", "wind", "red")), text


def _reference_step(model, token: int, cache) -> torch.Tensor:
    """A mixed-precision single-token step written from scratch: fp32 everywhere but each one-row
    matmul (bf16 on the layer's ``step_weight``), q and k rotated by ``apply_rotary``; writes the
    token's keys and values at slot ``cache.length``; logits [V]."""
    import torch.nn.functional as F

    from engine.runtime.layers import apply_rotary

    cfg = model.config
    h, hkv, d, pos = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim, cache.length

    def linear(layer, x):
        out = F.linear(x.to(torch.bfloat16), layer.step_weight).float()
        return out if layer.bias is None else out + layer.bias

    def norm(x, module):
        return F.rms_norm(x, (x.shape[-1],), module.weight, module.eps)

    cos, sin = model.rope.cos[pos], model.rope.sin[pos]
    x = model.embed_tokens.weight[token][None]  # [1, hidden]
    for i, block in enumerate(model.layers):
        attn = block.self_attn
        q, k, v = linear(attn.qkv_proj, norm(x, block.input_layernorm))[0].split(
            [h * d, hkv * d, hkv * d]
        )
        q, k, v = q.view(h, d), k.view(hkv, d), v.view(hkv, d)
        if attn.q_norm is not None:
            q, k = norm(q, attn.q_norm), norm(k, attn.k_norm)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        cache.k[i, 0, :, pos], cache.v[i, 0, :, pos] = k, v
        out = F.scaled_dot_product_attention(
            q.reshape(1, hkv, h // hkv, d), cache.k[i, :, :, : pos + 1], cache.v[i, :, :, : pos + 1]
        )
        x = x + linear(attn.o_proj, out.reshape(1, h * d))
        gate, up = linear(block.mlp.gate_up_proj, norm(x, block.post_attention_layernorm)).chunk(
            2, dim=-1
        )
        x = x + linear(block.mlp.down_proj, F.silu(gate) * up)
    return linear(model.lm_head, norm(x, model.norm))[0]


@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3"])
def test_a_single_step_computes_the_reference_step(one_thread, arch):
    """The single-token steps in mixed precision (the decode's only bf16 passes), through the
    lean step (``LeanStep``, where the architecture has it) and through the module path, equal a
    from-scratch reference bit for bit: logits and cache entries (qkv bias, q/k norms)."""
    changes = {"qwen2": {"attention_bias": True}, "qwen3": {"model_type": "qwen3", "qk_norm": True}}
    model = use_mixed_precision(
        make_tiny_target(cfg=dataclasses.replace(TINY_CONFIG, **changes.get(arch, {})))
    )
    assert (getattr(model, "lean", None) is not None) == (arch != "qwen3")  # q/k norms: modules
    caches = model.new_cache(32), model.new_cache(32), model.new_cache(32)
    prompt = torch.randint(0, 128, (1, 6))
    for cache in caches:
        model(prompt, cache)
        cache.commit(6)
    token = 3
    for _ in range(8):
        step = torch.tensor([[token]])
        logits = model(step, caches[0]).logits  # the lean step where there is one
        module = Transformer.forward(model, step, caches[1]).logits
        with torch.inference_mode():
            reference = _reference_step(model, token, caches[2])
        assert torch.equal(logits[0, 0], reference) and torch.equal(module[0, 0], reference)
        for cache in caches[:2]:
            assert torch.equal(cache.k, caches[2].k) and torch.equal(cache.v, caches[2].v)
        for cache in caches:
            cache.commit(1)
        token = int(reference.argmax())


def test_models_with_qk_norm_keep_the_module_path():
    cfg = dataclasses.replace(TINY_CONFIG, model_type="qwen3", qk_norm=True)
    assert type(use_mixed_precision(make_tiny_target(cfg=cfg))) is Transformer
