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
from tests.tiny import TINY_CONFIG, make_tiny_target, module_path


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


@pytest.mark.parametrize("bias", [False, True])
def test_the_lean_single_step_computes_what_the_modules_compute(one_thread, bias):
    cfg = dataclasses.replace(TINY_CONFIG, attention_bias=bias)
    model = use_mixed_precision(make_tiny_target(cfg=cfg))
    assert model.lean is not None
    lean_cache, module_cache = model.new_cache(32), model.new_cache(32)
    prompt = torch.randint(0, 128, (1, 6))
    for cache in (lean_cache, module_cache):
        model(prompt, cache)
        cache.commit(6)
    token = torch.tensor([[3]])
    for _ in range(8):
        assert model.lean.handles(token, lean_cache)
        lean = model(token, lean_cache).logits  # the lean path
        with module_path(model):
            reference = model(token, module_cache).logits  # the module path
        assert torch.equal(lean, reference)
        assert torch.equal(lean_cache.k, module_cache.k) and torch.equal(
            lean_cache.v, module_cache.v
        )
        lean_cache.commit(1), module_cache.commit(1)
        token = lean[:, -1].argmax(-1, keepdim=True)


def test_models_with_qk_norm_keep_the_module_path():
    cfg = dataclasses.replace(TINY_CONFIG, model_type="qwen3", qk_norm=True)
    assert type(use_mixed_precision(make_tiny_target(cfg=cfg))) is Transformer
