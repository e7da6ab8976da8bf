"""4-bit weights (dtype "int4"): packing, the layer, row independence, lossless speculation.

On a tiny random model; the real-model check (greedy speculative == plain in int4) is in
tests/promptx/test_shipped_drafter.py.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from engine.runtime.device import INT4, parse_dtype
from engine.runtime.int4 import (
    GROUP,
    WIDE_ROWS,
    Int4Linear,
    Int8Linear,
    int4_available,
    pack_int4,
    quantize_int4,
    rows_are_independent,
)
from tests.tiny import make_tiny_drafter, make_tiny_target

pytestmark = pytest.mark.skipif(
    not int4_available(), reason="this PyTorch build has no CPU int4 kernels"
)


def test_weights_on_a_4_bit_grid_are_packed_without_loss():
    gen = torch.Generator().manual_seed(0)
    rows, groups = 48, 4
    codes = torch.randint(0, 16, (rows, groups, GROUP), generator=gen).float()
    codes[..., 0], codes[..., 1] = 0, 15  # every group spans the full code range
    scale = (torch.rand(rows, groups, 1, generator=gen) * 0.01 + 0.001).to(torch.bfloat16).float()
    offset = (torch.randn(rows, groups, 1, generator=gen) * 0.05).to(torch.bfloat16).float()
    weight = ((codes - 8) * scale + offset).reshape(rows, groups * GROUP)
    _, _, dequantized, distance = pack_int4(weight)
    assert torch.equal(dequantized, weight) and distance == 0.0


def test_any_weight_is_within_half_a_step_of_its_4_bit_version():
    weight = torch.randn(64, 96) * 0.1
    _, scales_offsets, dequantized, _ = pack_int4(weight)
    step = scales_offsets[..., 0].float().t().repeat_interleave(GROUP, dim=1)  # [N, K]
    assert ((dequantized.float() - weight).abs() <= step * 0.51 + 1e-3).all()
    with pytest.raises(ValueError, match="multiple of 32"):
        pack_int4(torch.randn(8, 40))


def test_the_layer_computes_x_times_its_4_bit_weight_in_both_paths():
    torch.manual_seed(0)
    linear = torch.nn.Linear(96, 80, bias=True, dtype=torch.bfloat16)
    layer = Int4Linear(linear)
    for rows in (1, 7, WIDE_ROWS + 3):  # the int4 kernel, then the wide bf16 path
        x = torch.randn(1, rows, 96).to(torch.bfloat16)
        want = F.linear(x.float(), layer.weight.float(), layer.bias.float())
        got = layer(x)
        assert got.shape == (1, rows, 80) and got.dtype == torch.bfloat16
        assert torch.allclose(got.float(), want, rtol=2e-2, atol=2e-2)


def test_each_row_of_a_pass_is_computed_as_alone_where_the_probe_says_so():
    torch.manual_seed(0)
    layer = Int4Linear(torch.nn.Linear(128, 256, bias=False, dtype=torch.bfloat16))
    x = (torch.randn(33, 128) * torch.randn(33, 128).exp()).to(torch.bfloat16)
    with torch.inference_mode():
        alone = torch.cat([layer(x[i : i + 1]) for i in range(33)])
        same = all(torch.equal(layer(x[:rows]), alone[:rows]) for rows in (2, 9, 17, 33))
    if rows_are_independent(torch.get_num_threads()):
        assert same
    else:
        pytest.skip(
            "this CPU's int4 kernel mixes rows: "
            "int4 decodes plainly here (Generator.exact_batches False)"
        )


def test_int4_parses_and_quantizes_every_linear_layer():
    assert parse_dtype("INT4", "cpu") == INT4
    model = make_tiny_target()
    distance = quantize_int4(model)
    assert model.precision == "int4" and model.dtype == torch.bfloat16
    assert (
        model.embed_tokens.weight.dtype == torch.bfloat16
        and model.norm.weight.dtype == torch.float32
    )
    assert not any(type(m) is torch.nn.Linear for m in model.modules())
    assert sum(isinstance(m, Int4Linear) for m in model.modules()) == 4 * len(model.layers)
    assert isinstance(model.lm_head, Int8Linear)
    assert (
        0.3 < distance < 0.6
    )  # random weights: up to half a step (plus bf16 scale rounding) off the grid
    with pytest.raises(ValueError, match="does not have"):
        quantize_int4(
            make_tiny_target(), {"layers.0.nope": (torch.zeros(2, 64), torch.zeros(64, 2))}
        )


def test_low_rank_terms_add_what_a_merged_adapter_adds():
    torch.manual_seed(0)
    linear = torch.nn.Linear(96, 80, bias=False)
    a, b = torch.randn(4, 96) * 0.1, torch.randn(80, 4) * 0.1
    plain, tuned = Int4Linear(linear), Int4Linear(linear, (a, b))
    x = torch.randn(3, 96).to(torch.bfloat16)
    added = (tuned(x) - plain(x)).float()
    assert torch.allclose(added, x.float() @ (b @ a).t(), rtol=0.05, atol=0.02)


def test_a_merged_adapter_is_split_back_out_of_a_prepared_directory(tmp_path):
    """The int4 loader takes the adapter out of the merged weights: the base comes back (to fp32
    precision) and the low-rank terms are the adapter's."""
    from engine.training.lora import apply_adapter_to_dir, attach_lora, save_adapter
    from engine.weights.adapters import ADAPTER_COPY, split_adapter
    from engine.weights.loading import load_transformer
    from tests.engine.test_lora import save_hf_dir

    base_dir = tmp_path / "model"
    save_hf_dir(make_tiny_target(), base_dir)
    base = load_transformer(base_dir)
    tuned = load_transformer(base_dir)
    info = attach_lora(tuned, rank=4, alpha=8.0)
    with torch.no_grad():
        for name, p in tuned.named_parameters():
            if "lora_" in name:
                p.normal_(0, 0.05)
    save_adapter(tuned, tmp_path / "adapter.safetensors", info)
    apply_adapter_to_dir(base_dir, tmp_path / "adapter.safetensors")
    assert (base_dir / ADAPTER_COPY).is_file()
    merged = load_transformer(base_dir)
    terms = split_adapter(merged, base_dir)
    assert set(terms) == {
        n for n, m in base.named_modules() if type(m) is torch.nn.Linear and n != "lm_head"
    }
    for name, module in base.named_modules():
        if name in terms:
            assert torch.allclose(merged.get_submodule(name).weight, module.weight, atol=1e-6)
    quantize_int4(merged, terms)
    assert all(m.down is not None for m in merged.modules() if isinstance(m, Int4Linear))


@pytest.mark.parametrize("bias", [False, True])
def test_rows_passes_compute_what_the_modules_compute(one_thread, bias):
    """``Int4Rows.run_rows`` (batched int4 decoding) of one sequence after its prompt: plain steps
    and tree verification passes give the logits, taps and cache entries of
    ``Transformer.forward``, bit for bit, with low-rank terms, across an aligned-span boundary;
    two sequences in one pass each get what they get alone."""
    import dataclasses

    from engine.runtime.exact_rows import make_rows_exact
    from engine.runtime.int4_rows import Int4Rows, RowPass
    from engine.runtime.kv_cache import KEY_ALIGN
    from engine.speculative.loop import verify_inputs, verify_pass
    from engine.speculative.tree import DraftTree
    from tests.tiny import TINY_CONFIG

    model = make_tiny_target(cfg=dataclasses.replace(TINY_CONFIG, attention_bias=bias))
    gen = torch.Generator().manual_seed(1)
    terms = {
        name: (
            torch.randn(4, m.in_features, generator=gen) * 0.05,
            torch.randn(m.out_features, 4, generator=gen) * 0.05,
        )
        for name, m in model.named_modules()
        if type(m) is torch.nn.Linear and name != "lm_head"
    }
    quantize_int4(model, terms)
    make_rows_exact(model)
    assert Int4Rows.supports(model)
    rows = Int4Rows(model)
    prompt_length = KEY_ALIGN - 3  # the steps cross into a second aligned span
    caches = {"rows": model.new_cache(3 * KEY_ALIGN), "module": model.new_cache(3 * KEY_ALIGN)}
    prompt = torch.randint(0, 128, (1, prompt_length), generator=gen)
    for cache in caches.values():
        model(prompt, cache)
        cache.commit(prompt_length)
    token = torch.tensor([[3]])
    tree = DraftTree(
        torch.tensor([5, 9, 7, 11]), torch.tensor([-1, -1, 0, 2]), torch.zeros(4)
    )  # depth 3
    for i in range(8):
        taps = i % 2 == 0
        reference = model(token, caches["module"], taps=taps)
        ((logits, tapped),) = rows.run_rows([RowPass(token[0], caches["rows"])], taps=taps)
        assert torch.equal(logits, reference.logits[0])
        assert (tapped is None) == (not taps) and (
            not taps or torch.equal(tapped, reference.taps[0])
        )
        if i % 3 == 1:  # a verification pass at slots in lane columns
            module_logits, module_taps, _ = verify_pass(model, caches["module"], 4, tree)
            tokens, positions, mask, slots = verify_inputs(caches["rows"], 4, tree, model.layout)
            ((logits, tapped),) = rows.run_rows(
                [RowPass(tokens[0], caches["rows"], positions, mask, slots)], taps=True
            )
            assert torch.equal(logits, module_logits) and torch.equal(tapped, module_taps[0])
        assert torch.equal(caches["rows"].k, caches["module"].k) and torch.equal(
            caches["rows"].v, caches["module"].v
        )
        for cache in caches.values():
            cache.commit(1)
        token = reference.logits[:, -1].argmax(-1, keepdim=True)

    # two sequences in one pass, each in its own cache: each as alone
    def copy(cache):
        out = model.new_cache(3 * KEY_ALIGN)
        out.k.copy_(cache.k), out.v.copy_(cache.v), out.commit(cache.length)
        return out

    inputs = (torch.tensor([7, 8, 9, 10]), token[0])
    alone = [model(t[None], copy(caches["module"]), taps=True) for t in inputs]
    both = rows.run_rows([RowPass(t, copy(caches["rows"])) for t in inputs], taps=True)
    for (logits, tapped), reference in zip(both, alone):
        assert torch.equal(logits, reference.logits[0]) and torch.equal(tapped, reference.taps[0])


@pytest.mark.parametrize("budget", [0, 3, 8])
def test_a_batch_in_int4_decodes_each_row_as_alone(one_thread, budget):
    """Batched decoding of an int4 target in exact mode keeps one cache per row and shares only
    the kernel passes (``RowTargets``): every greedy row equals its plain single-sequence decode,
    whatever its batch-mates (ragged prompts, rows leaving early), plain rounds and trees alike."""
    from engine.decode.autoregressive import decode_autoregressive
    from engine.decode.sampling import SamplingParams
    from engine.decode.stopping import StopChecker
    from engine.runtime.exact_rows import make_rows_exact
    from engine.speculative.batch import RowTargets, decode_speculative_batch
    from engine.speculative.loop import FixedTree, TreeConfig

    if not rows_are_independent(torch.get_num_threads()):
        pytest.skip("this CPU's int4 kernel mixes rows: no exact batches in int4 here")
    model = make_tiny_target()
    quantize_int4(model)
    make_rows_exact(model)
    assert RowTargets.fits(model)
    drafter = make_tiny_drafter(model).to(torch.bfloat16).attach(model)
    gen = torch.Generator().manual_seed(4)
    prompts = [
        torch.randint(0, 128, (n,), generator=gen).tolist()
        for n in (20, 5, 61, 33, 12, 40, 9, 27, 50)
    ]
    params = [SamplingParams(max_new_tokens=n) for n in (40, 12, 40, 30, 40, 1, 25, 40, 36)]
    config = TreeConfig(
        budget=budget, max_depth=max(1, min(budget, 4)), top_k=2 if budget > 3 else 1
    )
    got: list[list[int]] = [[] for _ in prompts]
    for index, chunk in decode_speculative_batch(
        model,
        drafter,
        prompts,
        params,
        [StopChecker((), p.max_new_tokens) for p in params],
        planner=FixedTree(config),
    ):
        got[index].extend(chunk)
    for prompt, p, tokens in zip(prompts, params, got):
        assert tokens == list(
            decode_autoregressive(model, prompt, p, StopChecker((), p.max_new_tokens))
        )


def test_one_token_rows_over_the_same_span_share_an_attention_call():
    from engine.runtime.kv_cache import KVCache
    from engine.runtime.int4_rows import _groups

    layouts = [
        (None, None, torch.ones(t, span, dtype=torch.bool))
        for t, span in [(1, 64), (1, 64), (1, 128), (3, 128), (1, 128), (1, 128), (1, 64)]
    ]
    counts = [1, 1, 1, 3, 1, 1, 1]
    batch = KVCache(1, 7, 1, 4, 8, torch.float32)
    assert [list(g) for g in _groups(layouts, counts, batch)] == [[0, 1], [2], [3], [4, 5], [6]]
    assert [list(g) for g in _groups(layouts, counts, None)] == [[j] for j in range(7)]


def test_greedy_speculative_decoding_in_int4_equals_plain_decoding(one_thread):
    from engine.decode.autoregressive import decode_autoregressive
    from engine.decode.sampling import SamplingParams
    from engine.decode.stopping import StopChecker
    from engine.runtime.exact_rows import make_rows_exact
    from engine.speculative.loop import FixedTree, TreeConfig, decode_speculative

    if not rows_are_independent(torch.get_num_threads()):
        pytest.skip("this CPU's int4 kernel mixes rows: no lossless speculation in int4 here")
    model = make_tiny_target()
    quantize_int4(model)
    make_rows_exact(model)
    drafter = make_tiny_drafter(model).to(torch.bfloat16).attach(model)
    params = SamplingParams(max_new_tokens=48)
    for seed in range(3):
        prompt = torch.randint(
            0, 128, (20,), generator=torch.Generator().manual_seed(seed)
        ).tolist()
        plain = list(decode_autoregressive(model, prompt, params, StopChecker((), 48)))
        fast = [
            t
            for chunk in decode_speculative(
                model,
                drafter,
                prompt,
                params,
                StopChecker((), 48),
                planner=FixedTree(TreeConfig(budget=8)),
            )
            for t in chunk
        ]
        assert fast == plain


def test_a_stored_int4_model_comes_back_bit_for_bit_and_a_damaged_store_is_ignored(tmp_path):
    from engine.weights.int4_store import load_stored_int4, save_int4
    from tests.engine.test_lora import save_hf_dir

    model_dir = tmp_path / "model"
    save_hf_dir(make_tiny_target(), model_dir)
    model = make_tiny_target()
    out = model.layers[0].self_attn.qkv_proj.out_features
    a, b = torch.randn(4, 64) * 0.1, torch.randn(out, 4) * 0.1  # low-rank terms on one layer
    distance = quantize_int4(model, {"layers.0.self_attn.qkv_proj": (a, b)})
    path = tmp_path / "store" / "tiny.safetensors"
    save_int4(model, distance, path)
    restored, stored_distance = load_stored_int4(model_dir, path)
    assert stored_distance == distance and restored.precision == "int4"
    assert restored.layers[0].self_attn.qkv_proj.down is not None
    tokens = torch.tensor([list(range(3, 40))])
    with torch.inference_mode():
        assert torch.equal(
            restored(tokens, restored.new_cache(64)).logits,
            model(tokens, model.new_cache(64)).logits,
        )
    path.write_bytes(path.read_bytes()[:1000])
    assert load_stored_int4(model_dir, path) is None


@pytest.mark.slow
def test_auto_picks_int4_for_the_embedded_model_only_where_it_pays_and_changes_no_weight(model_dir):
    from engine.generator import Generator
    from engine.runtime.device import default_dtype, prefers_int4

    generator = Generator.from_dir(model_dir, dtype="auto")
    expected = "int4" if prefers_int4("cpu") else str(default_dtype("cpu")).removeprefix("torch.")
    assert generator.model.precision == expected
    # the embedded weights sit ~0.05 step off the 4-bit grid (bf16 scales): a stricter bound refuses
    # them
    from engine.weights.loading import load_int4

    assert load_int4(model_dir, "cpu", max_grid_distance=0.01) is None
    assert Generator.from_dir(model_dir, dtype="int4").model.precision == "int4"


def test_only_the_most_recently_used_stores_are_kept(tmp_path):
    import os
    import time

    from engine.weights.cache_dir import evict_oldest

    now = time.time()
    for i in range(5):
        path = tmp_path / f"model-{i}.safetensors"
        path.write_bytes(b"x")
        os.utime(path, (now - 100 + i, now - 100 + i))  # model-4 most recent
    old_tmp, new_tmp = tmp_path / "model-9.123.tmp", tmp_path / "model-8.456.tmp"
    old_tmp.write_bytes(b"x")
    new_tmp.write_bytes(b"x")
    os.utime(old_tmp, (now - 7200, now - 7200))
    evict_oldest(tmp_path, keep=3)
    assert sorted(p.name for p in tmp_path.glob("*.safetensors")) == [
        f"model-{i}.safetensors" for i in (2, 3, 4)
    ]
    assert not old_tmp.exists() and new_tmp.exists()  # a writer may still be busy with the new one


@pytest.mark.slow
def test_an_unwritable_cache_only_costs_quantizing_again(model_dir, tmp_path, monkeypatch):
    from engine.weights.loading import load_int4

    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    monkeypatch.setenv("PROMPTX_CACHE", str(blocked))  # the store's folder cannot be made
    model, _, distance = load_int4(model_dir)
    assert model.precision == "int4" and distance < 0.1


def test_a_model_that_4_bits_would_change_is_refused_once_and_not_stored(tmp_path, monkeypatch):
    """``auto`` takes int4 only for weights already on the 4-bit grid: a random float model is
    refused; only its distance is kept, so the next process refuses it without quantizing."""
    import engine.runtime.int4 as int4_module
    from engine.weights.loading import load_int4
    from tests.engine.test_lora import save_hf_dir

    monkeypatch.setenv("PROMPTX_CACHE", str(tmp_path / "cache"))
    model_dir = tmp_path / "model"
    save_hf_dir(make_tiny_target(), model_dir)
    assert load_int4(model_dir, max_grid_distance=0.1) is None
    store = tmp_path / "cache" / "int4"
    assert [p.suffix for p in store.iterdir()] == [".far"] and float(
        next(store.iterdir()).read_text()
    ) > 0.1

    def no_quantizing(*args, **kwargs):
        raise AssertionError("quantized again")

    monkeypatch.setattr(int4_module, "quantize_int4", no_quantizing)
    assert load_int4(model_dir, max_grid_distance=0.1) is None
    assert [p.suffix for p in store.iterdir()] == [".far"]
