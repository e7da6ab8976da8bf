"""CUDA graphs of the target's batch-1 passes (engine.runtime.cuda_graphs).

On the CPU: the bucket choice, the padding and its masks (against the boolean
tree mask the verifier uses), the static cache's lease, and every padded pass
run eagerly (``capture=False``, or a capture that fails) giving the tokens of
the module path, plain and speculative. On CUDA (skipped elsewhere): replayed
graphs give the tokens of eager decoding in fp32, greedy and sampled, plain
and speculative, and a replay is bit for bit the eager padded pass.
"""

from __future__ import annotations

import gc
import importlib.util

import pytest
import torch

from engine.decode.autoregressive import decode_autoregressive, prefill
from engine.decode.sampling import SamplingParams
from engine.decode.stats import DecodeStats
from engine.decode.stopping import StopChecker
from engine.runtime import cuda_graphs
from engine.runtime.cuda_graphs import (
    GRAPH_ROWS,
    NODE_BUCKETS,
    CudaGraphs,
    PassInputs,
    attach_cuda_graphs,
    cuda_graphs_of,
    graph_rows,
    pad_pass,
    use_cuda_graphs,
)
from engine.runtime.kv_cache import KVCache
from engine.runtime.layout import TreeLayout
from engine.runtime.model import Transformer, prefix_causal_mask, use_attention_kernel
from engine.speculative.loop import FixedTree, TreeConfig, decode_speculative, verify_inputs
from engine.speculative.tree import DraftTree
from tests.tiny import make_tiny_drafter, make_tiny_target

CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(
    not CUDA, reason="CUDA graphs need a CUDA GPU (torch.cuda.is_available() is False)"
)
PROMPT = [5, 17, 3, 99, 42, 7, 64, 1, 12, 30, 8, 77]
CONFIGS = [
    TreeConfig.chain(4),
    TreeConfig(budget=8, max_depth=4, top_k=2),
    TreeConfig(budget=16, max_depth=5, top_k=4),
    TreeConfig(budget=32, max_depth=6, top_k=4),
]


def branching_tree() -> DraftTree:
    """root -> a, b; a -> c, d; c -> e; b -> f (6 nodes, depth 3)."""
    return DraftTree(
        torch.tensor([11, 12, 13, 14, 15, 16]),
        [-1, -1, 0, 0, 2, 1],
        torch.tensor([-0.1, -0.5, -0.2, -0.9, -0.3, -0.6]),
    )


def ancestors_with_root(parents: list[int]) -> torch.Tensor:
    """The verifier's rule written out: row i (0 = root) sees the root, itself and its ancestors."""
    n = len(parents)
    mask = torch.zeros(n + 1, n + 1, dtype=torch.bool)
    mask[:, 0] = True
    for i in range(n):
        node = i
        while node >= 0:
            mask[i + 1, node + 1] = True
            node = parents[node]
    return mask


def cache_after(model, prompt, capacity=128) -> KVCache:
    cache = model.new_cache(capacity)
    prefill(model, prompt, cache)
    return cache


def greedy(n=24) -> SamplingParams:
    return SamplingParams(max_new_tokens=n)


def plain(model, params, prompt=PROMPT) -> list[int]:
    return list(
        decode_autoregressive(model, prompt, params, StopChecker([], params.max_new_tokens))
    )


def speculative(model, drafter, params, config, prompt=PROMPT) -> list[int]:
    stop = StopChecker([], params.max_new_tokens)
    return [
        t
        for chunk in decode_speculative(
            model, drafter, prompt, params, stop, DecodeStats(), FixedTree(config)
        )
        for t in chunk
    ]


@pytest.fixture
def tiny():
    """A tiny fp32 target on the CPU, with one thread (the matmuls are tiny)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield make_tiny_target(seed=3)
    torch.set_num_threads(threads)


# ---- buckets and padding (CPU) ------------------------------------------------------------------
def test_a_pass_runs_in_the_smallest_bucket_that_holds_its_tree():
    assert GRAPH_ROWS == (1, 2, 5, 9, 17, 33, 65) and NODE_BUCKETS == (1, 4, 8, 16, 32, 64)
    expected = {1: 1, 2: 2, 3: 5, 5: 5, 6: 9, 9: 9, 10: 17, 17: 17, 18: 33, 33: 33, 34: 65, 65: 65}
    assert {rows: graph_rows(rows) for rows in expected} == expected
    assert graph_rows(66) is None and graph_rows(1000) is None
    with pytest.raises(ValueError):
        graph_rows(0)


def test_padding_keeps_the_real_rows_and_isolates_the_padding_rows(tiny):
    cache, tree = cache_after(tiny, PROMPT), branching_tree()
    tokens, positions, mask, slots = verify_inputs(cache, 9, tree, TreeLayout())
    start, t, width = cache.length, tree.size + 1, mask.shape[1]
    out = pad_pass(tokens, positions, mask, start, PassInputs.empty(graph_rows(t), 96, "cpu"))
    r = out.rows
    assert r == 9
    assert torch.equal(out.tokens[:, :t], tokens) and not out.tokens[:, t:].any()
    assert torch.equal(out.positions[:t], positions) and (out.positions[t:] == start).all()
    assert torch.equal(out.slots, torch.arange(start, start + r)) and torch.equal(
        out.slots[:t], slots
    )
    assert torch.equal(out.mask[:t, :width], mask) and not out.mask[:t, width:].any()
    for row in range(t, r):  # a padding row sees its own slot, which no real row sees
        assert out.mask[row].nonzero().flatten().tolist() == [start + row]
        assert not out.mask[:t, start + row].any()


@pytest.mark.parametrize("seed", range(6))
def test_the_padded_mask_is_the_verifiers_ancestor_mask(tiny, seed):
    """The mask a graph reads over the whole static cache: the prefix, then exactly the boolean
    ancestor mask of the tree (``DraftTree.mask_with_root``, the one verification uses), else
    nothing."""
    gen = torch.Generator().manual_seed(seed)
    n = int(torch.randint(1, 30, (1,), generator=gen))
    parents = [int(torch.randint(-1, i, (1,), generator=gen)) if i else -1 for i in range(n)]
    tree = DraftTree(torch.arange(100, 100 + n), parents, -torch.arange(n, dtype=torch.float32))
    cache = cache_after(tiny, PROMPT[: 3 + seed])
    tokens, positions, mask, _ = verify_inputs(cache, 9, tree, TreeLayout())
    start = cache.length
    out = pad_pass(tokens, positions, mask, start, PassInputs.empty(graph_rows(n + 1), 128, "cpu"))
    real = out.mask[: n + 1]
    assert real[:, :start].all()
    assert torch.equal(real[:, start : start + n + 1], tree.mask_with_root())
    assert torch.equal(real[:, start : start + n + 1], ancestors_with_root(parents))
    assert not real[:, start + n + 1 :].any()
    assert torch.equal(
        out.positions[: n + 1], start + torch.cat([torch.zeros(1, dtype=torch.long), tree.depths])
    )


def test_padding_without_positions_or_mask_is_the_models_default(tiny):
    start, t = 20, 3
    tokens = torch.tensor([[4, 5, 6]])
    out = pad_pass(tokens, None, None, start, PassInputs.empty(graph_rows(t), 64, "cpu"))
    assert torch.equal(out.mask[:t, : start + t], prefix_causal_mask(start, t, "cpu"))
    assert torch.equal(out.positions[:t], torch.arange(start, start + t))
    one = pad_pass(tokens[:, :1], None, None, start, PassInputs.empty(1, 64, "cpu"))
    assert one.mask[0].nonzero().flatten().tolist() == list(range(start + 1))


def test_padding_refuses_what_it_cannot_hold():
    inputs = PassInputs.empty(5, 64, "cpu")
    with pytest.raises(ValueError):
        pad_pass(torch.zeros(1, 6, dtype=torch.long), None, None, 10, inputs)
    with pytest.raises(ValueError):  # keys past the pass's own slots: padding rows live there
        pad_pass(
            torch.zeros(1, 2, dtype=torch.long),
            None,
            torch.ones(2, 14, dtype=torch.bool),
            10,
            inputs,
        )


# ---- the padded passes, run eagerly (CPU) -------------------------------------------------------
def test_what_the_padding_rows_hold_never_changes_a_real_row(tiny):
    graphs = CudaGraphs(tiny, capacity=128, capture=False)
    cache = graphs.lease(64)
    prefill(tiny, PROMPT, cache)
    tokens, positions, mask, _ = verify_inputs(cache, 9, branching_tree(), TreeLayout())
    inputs = pad_pass(tokens, positions, mask, cache.length, graphs.inputs[9])
    first = graphs.run_eager(9)
    inputs.tokens[:, 7:] = torch.tensor([[101, 102]])  # other padding tokens, at other positions
    inputs.positions[7:] = torch.tensor([3, 60])
    second = graphs.run_eager(9)
    assert torch.equal(first.logits[:, :7], second.logits[:, :7]) and torch.equal(
        first.taps[:, :7], second.taps[:, :7]
    )
    assert not torch.equal(first.logits[:, 7:], second.logits[:, 7:])


def test_a_padded_verification_pass_computes_the_module_paths_logits(tiny):
    tree = branching_tree()
    reference_cache = cache_after(tiny, PROMPT)
    tokens, positions, mask, _ = verify_inputs(reference_cache, 9, tree, TreeLayout())
    expected = tiny(tokens, reference_cache, positions=positions, mask=mask, taps=True)
    use_cuda_graphs(tiny, CudaGraphs(tiny, capacity=128, capture=False))
    cache = cache_after(tiny, PROMPT, capacity=64)
    assert cache.k is tiny.graphs.storage.k
    got = tiny(tokens, cache, positions=positions, mask=mask, taps=True)
    assert tiny.graphs.eager[9] == 1
    torch.testing.assert_close(got.logits, expected.logits, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got.taps, expected.taps, rtol=1e-5, atol=1e-5)
    assert torch.equal(got.logits.argmax(-1), expected.logits.argmax(-1))


def test_greedy_decoding_through_the_padded_passes_equals_the_module_path(tiny):
    expected = plain(tiny, greedy(40))
    use_cuda_graphs(tiny, CudaGraphs(tiny, capacity=128, capture=False))
    assert plain(tiny, greedy(40)) == expected
    assert tiny.graphs.eager[1] == 39 and not tiny.graphs.replays  # every step after the prompt's
    assert tiny.graphs.module_passes == 1  # the prompt


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"b{c.budget}d{c.max_depth}k{c.top_k}")
def test_greedy_speculation_through_the_padded_passes_is_lossless(tiny, config):
    drafter = make_tiny_drafter(tiny, window=16)
    expected = plain(tiny, greedy(40))
    use_cuda_graphs(tiny, CudaGraphs(tiny, capacity=256, capture=False))
    assert speculative(tiny, drafter, greedy(40), config) == expected
    assert graph_rows(config.budget + 1) in tiny.graphs.eager


def test_sampled_decoding_through_the_padded_passes_repeats_the_module_paths_draws(tiny):
    params = SamplingParams(temperature=0.9, max_new_tokens=30, seed=7)
    drafter = make_tiny_drafter(tiny, window=16)
    expected_plain, expected_spec = (
        plain(tiny, params),
        speculative(tiny, drafter, params, CONFIGS[1]),
    )
    use_cuda_graphs(tiny, CudaGraphs(tiny, capacity=256, capture=False))
    assert plain(tiny, params) == expected_plain
    assert speculative(tiny, drafter, params, CONFIGS[1]) == expected_spec


# ---- fallbacks and the lease (CPU) --------------------------------------------------------------
def test_off_cuda_nothing_is_attached(tiny):
    from engine.generator import Generator

    assert attach_cuda_graphs(tiny) is None and cuda_graphs_of(tiny) is None
    assert cuda_graphs_of(Generator(tiny, tokenizer=None, cuda_graphs=True).model) is None
    assert type(tiny.new_cache(64)) is KVCache


def test_a_failed_capture_runs_its_bucket_eagerly(tiny):
    expected = plain(tiny, greedy(20))
    use_cuda_graphs(
        tiny, CudaGraphs(tiny, capacity=128, rows=(1, 5), capture=True)
    )  # no CUDA here: both fail
    assert set(tiny.graphs.failed) == {1, 5} and not tiny.graphs.graphs
    assert plain(tiny, greedy(20)) == expected and tiny.graphs.eager[1] == 19
    summary = tiny.graphs.summary()
    assert summary["captured_rows"] == [] and set(summary["failed"]) == {"1", "5"}
    assert summary["eager_padded_passes"] == {"1": 19} and summary["capture_s"] >= 0


def test_passes_without_a_bucket_go_through_the_modules(tiny):
    drafter = make_tiny_drafter(tiny, window=16)
    expected = plain(tiny, greedy(30))
    use_cuda_graphs(
        tiny, CudaGraphs(tiny, capacity=256, rows=(1, 5), capture=False)
    )  # trees of up to 4 nodes
    assert speculative(tiny, drafter, greedy(30), CONFIGS[1]) == expected  # 8 nodes: the modules
    assert tiny.graphs.module_passes > 1 and 9 not in tiny.graphs.eager


def test_the_static_cache_is_leased_to_one_decode_at_a_time(tiny):
    graphs = CudaGraphs(tiny, capacity=128, capture=False)
    use_cuda_graphs(tiny, graphs)
    first = tiny.new_cache(100)
    assert first.k is graphs.storage.k and first.capacity == 100 and first.length == 0
    second = tiny.new_cache(100)  # the first is still alive: an ordinary cache
    assert second.k is not graphs.storage.k
    assert tiny.new_cache(129).k is not graphs.storage.k  # more than the static capacity
    assert tiny.new_cache(64, batch=2).k.shape[1] == 2
    del first
    gc.collect()
    again = tiny.new_cache(64)
    assert again.k is graphs.storage.k
    prefill(tiny, PROMPT, again)
    step = torch.tensor([[3]])
    assert graphs.handles(step, again) and not graphs.handles(step, second)
    assert not graphs.handles(torch.zeros(1, 66, dtype=torch.long), again)  # 65 nodes: no bucket
    assert not graphs.handles(step, again, slots=torch.tensor([again.length]))
    again.k = again.k.clone()  # storage replaced (e.g. a batch re-packed): modules
    assert not graphs.handles(step, again)


def test_graphs_can_be_turned_off_by_the_environment(monkeypatch):
    monkeypatch.delenv(cuda_graphs.ENV, raising=False)
    assert cuda_graphs.graphs_wanted()
    for off in ("0", "off", "False", "no"):
        monkeypatch.setenv(cuda_graphs.ENV, off)
        assert not cuda_graphs.graphs_wanted()
    monkeypatch.setenv(cuda_graphs.ENV, "1")
    assert cuda_graphs.graphs_wanted()


# ---- CUDA ---------------------------------------------------------------------------------------
@pytest.fixture
def cuda_tiny():
    """(target, drafter, graphs): the tiny fp32 target and drafter on the GPU, graphs captured but
    not attached (each test runs its eager reference first)."""
    model = make_tiny_target(seed=3)
    drafter = make_tiny_drafter(model, window=16)
    model.to("cuda")
    drafter = drafter.to("cuda").attach(model)
    graphs = attach_cuda_graphs(model, capacity=256)
    assert graphs is not None and cuda_graphs_of(model) is graphs
    model.__class__ = Transformer  # attached by each test after its eager reference
    return model, drafter, graphs


@needs_cuda
def test_every_bucket_is_captured_and_the_capture_cost_reported(cuda_tiny):
    _, _, graphs = cuda_tiny
    assert graphs.failed == {} and sorted(graphs.graphs) == list(GRAPH_ROWS)
    assert graphs.summary()["capture_s"] > 0


@needs_cuda
def test_replayed_greedy_decoding_equals_eager_decoding_in_fp32(cuda_tiny):
    model, _, graphs = cuda_tiny
    expected = plain(model, greedy(100))
    use_cuda_graphs(model, graphs)
    assert plain(model, greedy(100)) == expected
    assert graphs.replays[1] == 99 and not graphs.eager


@needs_cuda
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"b{c.budget}d{c.max_depth}k{c.top_k}")
def test_replayed_greedy_speculation_equals_eager_plain_decoding_in_fp32(cuda_tiny, config):
    model, drafter, graphs = cuda_tiny
    expected = plain(model, greedy(100))
    use_cuda_graphs(model, graphs)
    assert speculative(model, drafter, greedy(100), config) == expected
    assert graphs.replays[graph_rows(config.budget + 1)] > 0 and not graphs.eager


@needs_cuda
def test_replayed_sampled_decoding_repeats_eager_sampled_decoding_in_fp32(cuda_tiny):
    model, drafter, graphs = cuda_tiny
    params = SamplingParams(temperature=0.9, max_new_tokens=60, seed=11)
    expected_plain, expected_spec = (
        plain(model, params),
        speculative(model, drafter, params, CONFIGS[2]),
    )
    use_cuda_graphs(model, graphs)
    assert plain(model, params) == expected_plain
    assert speculative(model, drafter, params, CONFIGS[2]) == expected_spec
    assert graphs.replays[1] > 0 and graphs.replays[17] > 0


@needs_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_a_replay_is_bit_for_bit_the_eager_padded_pass(dtype):
    model = make_tiny_target(seed=3).to("cuda", dtype)
    model.dtype, model.precision = dtype, str(dtype).removeprefix("torch.")
    replayed, eager = (
        CudaGraphs(model, capacity=256),
        CudaGraphs(model, capacity=256, capture=False),
    )
    assert replayed.failed == {}
    tree = branching_tree()
    logits = []
    for graphs in (replayed, eager):
        use_cuda_graphs(model, graphs)
        cache = model.new_cache(200)
        out = prefill(model, PROMPT, cache)
        token, seen = int(out.logits[0, -1].argmax()), []
        for _ in range(20):
            step = model(torch.tensor([[token]], device="cuda"), cache).logits[0, -1]
            cache.commit(1)
            token = int(step.argmax())
            seen.append(step)
        tokens, positions, mask, _ = verify_inputs(cache, token, tree, TreeLayout())
        seen.append(model(tokens, cache, positions=positions, mask=mask, taps=True).logits[0])
        logits.append(seen)
        del cache
        gc.collect()
    assert replayed.replays[1] == 20 and replayed.replays[9] == 1 and eager.eager[1] == 20
    for a, b in zip(*logits):
        assert torch.equal(a, b)


@needs_cuda
def test_a_cuda_generator_attaches_graphs_unless_told_not_to(monkeypatch):
    from engine.generator import Generator

    assert (
        cuda_graphs_of(Generator(make_tiny_target().to("cuda"), tokenizer=None).model) is not None
    )
    assert (
        cuda_graphs_of(
            Generator(make_tiny_target().to("cuda"), tokenizer=None, cuda_graphs=False).model
        )
        is None
    )
    monkeypatch.setenv(cuda_graphs.ENV, "0")
    assert cuda_graphs_of(Generator(make_tiny_target().to("cuda"), tokenizer=None).model) is None


# ---- tree attention: FlashInfer against SDPA ----------------------------------------------------
def test_an_attention_kernel_takes_every_batch1_pass_after_the_prompt_with_its_mask(tiny):
    """The hook FlashInfer uses (``KernelAttention``), with SDPA itself as the kernel: the same
    tokens; it sees the single-token steps (every key visible) and the verification passes."""
    from engine.runtime.layers import attend
    from engine.runtime.tree_attention import use_flashinfer

    drafter = make_tiny_drafter(tiny, window=16)
    expected = plain(tiny, greedy(30))
    assert not use_flashinfer(tiny)  # a CPU: nothing changes
    seen = []

    def kernel(q, k, v, mask):
        seen.append((q.shape[2], tuple(mask.shape), bool(mask.all())))
        return attend(q, k, v, mask, causal=False)

    use_attention_kernel(tiny, kernel)
    assert plain(tiny, greedy(30)) == expected
    assert {rows for rows, _, every in seen if every} == {1} and len(seen) == 29 * len(tiny.layers)
    seen.clear()
    assert speculative(tiny, drafter, greedy(30), CONFIGS[2]) == expected
    assert any(rows > 1 for rows, _, _ in seen)


needs_flashinfer = pytest.mark.skipif(
    not CUDA or importlib.util.find_spec("flashinfer") is None,
    reason="needs a CUDA GPU and flashinfer (pip install 'promptx[gpu]')",
)


@needs_flashinfer
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("seed", range(3))
def test_flashinfer_tree_attention_agrees_with_sdpa(dtype, seed):
    from engine.runtime.layers import attend
    from engine.runtime.tree_attention import flashinfer_agrees, flashinfer_attend

    assert flashinfer_agrees(dtype, 9, 3, 64, "cuda:0")
    gen = torch.Generator().manual_seed(seed)
    n = int(torch.randint(1, 64, (1,), generator=gen))
    parents = [int(torch.randint(-1, i, (1,), generator=gen)) if i else -1 for i in range(n)]
    tree = DraftTree(torch.arange(n), parents, -torch.arange(n, dtype=torch.float32))
    start, storage = 300, 512
    mask = torch.zeros(n + 1, start + n + 1, dtype=torch.bool)
    mask[:, :start] = True
    mask[:, start:] = tree.mask_with_root()
    q = torch.randn(1, 9, n + 1, 64, generator=gen).to("cuda", dtype)
    kv = torch.randn(2, 1, 3, storage, 64, generator=gen).to("cuda", dtype)
    k, v, mask = kv[0, :, :, : start + n + 1], kv[1, :, :, : start + n + 1], mask.cuda()
    got, want = flashinfer_attend(q, k, v, mask), attend(q, k, v, mask, causal=False)
    torch.testing.assert_close(got.float(), want.float(), atol=2e-2, rtol=2e-2)


@needs_flashinfer
def test_a_bf16_target_with_flashinfer_replays_its_graphs():
    from engine.runtime.tree_attention import use_flashinfer

    from dataclasses import replace

    from tests.tiny import TINY_CONFIG

    cfg = replace(
        TINY_CONFIG,
        hidden_size=256,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=64,
        num_hidden_layers=2,
    )  # a head size FlashInfer has kernels for
    model = make_tiny_target(seed=3, cfg=cfg).to("cuda", torch.bfloat16)
    model.dtype, model.precision = torch.bfloat16, "bfloat16"
    assert use_flashinfer(model)
    graphs = attach_cuda_graphs(model, capacity=256)
    assert graphs.failed == {}
    assert len(plain(model, greedy(40))) == 40 and graphs.replays[1] == 39
