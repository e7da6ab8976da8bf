"""Drafter network (engine.speculative.drafter) and its checkpoints (engine.speculative.checkpoint),
on a tiny random target."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch
from safetensors.torch import load_file, save_file

from engine.runtime.config import ModelConfig
from engine.runtime.model import Transformer
from engine.speculative.checkpoint import (
    DrafterLoadError,
    load_drafter,
    save_drafter,
    target_fingerprint,
)
from engine.speculative.drafter import Drafter, DrafterConfig, DrafterMismatchError
from tests.tiny import TINY_CONFIG, make_tiny_drafter, make_tiny_target

CFG = TINY_CONFIG
ATOL = 1e-5


make_target = make_tiny_target
make_drafter = make_tiny_drafter
pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def target() -> Transformer:
    return make_target()


def inputs(t: int, seed: int = 2, batch: int = 1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(batch, t, CFG.hidden_size, generator=g), torch.randint(
        0, CFG.vocab_size, (batch, t), generator=g
    )


@torch.inference_mode()
def run(drafter, hidden, tokens, cache=None, **kw):
    cache = cache or drafter.new_cache(64, batch=hidden.shape[0])
    return drafter(hidden, tokens, cache, **kw), cache


# ---- network ------------------------------------------------------------------------------------


def test_fuse_and_forward_shapes(target):
    drafter = make_drafter(target, chunk_norms=True)
    tokens = torch.randint(0, 128, (2, 5))
    with torch.inference_mode():
        taps = torch.randn(2, 5, 192)
    hidden = drafter.fuse(taps)  # inference tensor, grad mode on: must still work
    assert hidden.shape == (2, 5, 64)
    out, cache = run(drafter, hidden, tokens)
    assert out.shape == (2, 5, 64) and drafter.logprobs(out).shape == (2, 5, 128)
    assert cache.length == 0  # forward writes but never commits


def test_fuse_takes_target_taps(target):
    with torch.inference_mode():
        taps = target(torch.randint(0, 128, (1, 4)), target.new_cache(16), taps=True).taps
    assert (
        taps.shape[-1] == 3 * CFG.hidden_size
    )  # tap layers (2, 3, 3) for N=6: layer 3 counted twice
    assert make_drafter(target).fuse(taps).shape == (1, 4, 64)


def test_cache_contract_incremental_equals_prefill(target):
    drafter = make_drafter(target)
    hidden, tokens = inputs(8)
    full, _ = run(drafter, hidden, tokens)
    cache = drafter.new_cache(64)
    pieces = []
    for lo, hi in [(0, 3), (3, 4), (4, 7)]:
        out, _ = run(drafter, hidden[:, lo:hi], tokens[:, lo:hi], cache)
        cache.commit(hi - lo)
        pieces.append(out)
    assert cache.length == 7
    torch.testing.assert_close(torch.cat(pieces, 1), full[:, :7], atol=ATOL, rtol=0)
    # an uncommitted write (a rejected draft) is simply overwritten by the next forward
    run(drafter, torch.randn(1, 2, 64), tokens[:, :2], cache)
    assert cache.length == 7
    last, _ = run(drafter, hidden[:, 7:], tokens[:, 7:], cache)
    torch.testing.assert_close(last, full[:, 7:], atol=ATOL, rtol=0)


@pytest.mark.parametrize("window", [1, 3, 5])
def test_sliding_window_equals_truncated_cache(target, window):
    drafter = make_drafter(target, window=window)
    hidden, tokens = inputs(9)
    windowed, _ = run(drafter, hidden, tokens)
    plain = make_drafter(target)  # same weights, full attention
    plain.load_state_dict(drafter.state_dict())
    for p in range(9):
        lo = max(0, p - window + 1)  # only the last `window` keys, same rope positions
        ref, _ = run(
            plain, hidden[:, lo : p + 1], tokens[:, lo : p + 1], positions=torch.arange(lo, p + 1)
        )
        torch.testing.assert_close(windowed[:, p], ref[:, -1], atol=ATOL, rtol=0)
    # decoding one token at a time over a committed prefix gives the same
    cache = drafter.new_cache(64)
    run(drafter, hidden[:, :6], tokens[:, :6], cache)
    cache.commit(6)
    step, _ = run(drafter, hidden[:, 6:7], tokens[:, 6:7], cache)
    torch.testing.assert_close(step[:, 0], windowed[:, 6], atol=ATOL, rtol=0)
    if window < 5:
        full, _ = run(plain, hidden, tokens)
        assert not torch.allclose(full[:, 6], windowed[:, 6], atol=1e-3)


@pytest.mark.parametrize("window", [None, 2])
def test_tree_mask_equals_separate_branches(target, window):
    """Tree a(depth 1) -> c(2), b(1) -> d(2) -> e(3) over a 5-token prefix, in one pass."""
    drafter = make_drafter(target, window=window)
    prefix_h, prefix_t = inputs(5, seed=3)
    tree_h, tree_t = inputs(5, seed=4)
    parents, depth = [-1, -1, 0, 1, 3], torch.tensor([1, 1, 2, 2, 3])
    positions = 4 + depth
    mask = torch.zeros(5, 10, dtype=torch.bool)
    mask[:, :5] = True
    for i, p in enumerate(parents):
        mask[i, 5 + i] = True
        if p >= 0:
            mask[i, 5:] |= mask[p, 5:]
    cache = drafter.new_cache(64)
    run(drafter, prefix_h, prefix_t, cache)
    cache.commit(5)
    key_positions = torch.cat([torch.arange(5), positions])
    tree, _ = run(
        drafter, tree_h, tree_t, cache, positions=positions, mask=mask, key_positions=key_positions
    )
    assert cache.length == 5
    for branch in ([0, 2], [1, 3, 4]):
        c2 = drafter.new_cache(64)
        run(drafter, prefix_h, prefix_t, c2)
        c2.commit(5)
        ref, _ = run(drafter, tree_h[:, branch], tree_t[:, branch], c2)
        torch.testing.assert_close(tree[:, branch], ref, atol=ATOL, rtol=0)


def test_training_unroll_backpropagates_without_touching_target(target):
    drafter = make_drafter(target).train()
    hidden, tokens = inputs(4)
    cache = drafter.new_cache(16)
    out = drafter(drafter.fuse(torch.randn(1, 4, 192)), tokens, cache)
    cache.commit(4)
    # step 2 at the next slots: sees step-0 keys causally plus its own position
    mask = torch.cat([torch.ones(4, 4, dtype=torch.bool).tril(), torch.eye(4, dtype=torch.bool)], 1)
    out2 = drafter(out, tokens, cache, positions=torch.arange(1, 5), mask=mask)
    (drafter.logprobs(out).mean() + drafter.logprobs(out2).mean()).backward()
    assert (
        drafter.fc.weight.grad is not None
        and drafter.midlayer.self_attn.k_proj.weight.grad.abs().sum() > 0
    )
    assert target.embed_tokens.weight.grad is None and target.lm_head.weight.grad is None
    assert all(not n.startswith("embed") for n, _ in drafter.named_parameters())


# ---- heads --------------------------------------------------------------------------------------


def test_topk_full_head_equals_torch_topk(target):
    drafter = make_drafter(target)
    out, _ = run(drafter, *inputs(6))
    logp, ids = drafter.topk(out[0], 8)
    ref = drafter.logprobs(out[0]).topk(8)
    torch.testing.assert_close(logp, ref.values)
    assert torch.equal(ids, ref.indices)
    torch.testing.assert_close(drafter.logprobs(out).exp().sum(-1), torch.ones(1, 6))


@pytest.mark.parametrize("m", [128, 32])
def test_lowrank_full_rank_reproduces_full_head(target, m):
    drafter = make_drafter(target, lowrank_rank=64, lowrank_candidates=m)
    out, _ = run(drafter, *inputs(6))
    logp, ids = drafter.topk(out[0], 8)
    ref = drafter.logprobs(out[0]).topk(8)
    torch.testing.assert_close(logp, ref.values, atol=1e-4, rtol=0)
    assert torch.equal(ids, ref.indices)
    torch.testing.assert_close(drafter.lowrank_logits(out), drafter.logits(out), atol=1e-4, rtol=0)
    with pytest.raises(ValueError):
        drafter.topk(out[0], m + 1)


def test_lowrank_small_rank_renormalises(target):
    drafter = make_drafter(target, lowrank_rank=8, lowrank_candidates=16)
    out, _ = run(drafter, *inputs(6))
    logp, ids = drafter.topk(out[0], 4)
    assert logp.shape == ids.shape == (6, 4) and (logp <= 0).all()
    assert torch.all(logp[:, :-1] >= logp[:, 1:])
    exact = drafter.logits(out[0]).gather(1, ids)  # exact logits of the chosen candidates
    torch.testing.assert_close(logp - logp[:, :1], exact - exact[:, :1], atol=1e-4, rtol=0)


def test_reduced_vocab_maps_ids_through_d2t(target):
    drafter = make_drafter(target, draft_vocab_size=40)
    assert drafter.lm_head.weight.shape == (40, 64) and int(drafter.t2d.sum()) == 40
    out, _ = run(drafter, *inputs(6))
    logp, ids = drafter.topk(out[0], 5)
    ref = drafter.logprobs(out[0]).topk(5)
    target_ids = torch.arange(40) + drafter.d2t
    assert drafter.logprobs(out).shape == (1, 6, 40)
    assert torch.equal(ids, target_ids[ref.indices]) and drafter.t2d[ids].all()
    torch.testing.assert_close(logp, ref.values)
    lowrank = make_drafter(target, draft_vocab_size=40, lowrank_rank=40, lowrank_candidates=20)
    lowrank.load_state_dict({**lowrank.state_dict(), **drafter.state_dict()})
    lowrank.init_lowrank_from_head()
    lr_logp, lr_ids = lowrank.topk(out[0], 5)
    assert torch.equal(lr_ids, ids)
    torch.testing.assert_close(lr_logp, logp, atol=1e-4, rtol=0)


# ---- checkpoints --------------------------------------------------------------------------------


def outputs(drafter):
    hidden, tokens = inputs(6)
    out, _ = run(drafter, hidden, tokens)
    return out, drafter.logprobs(out), *drafter.topk(out[0], 4)


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"draft_vocab_size": 40},
        {"lowrank_rank": 16, "window": 3},
        {"draft_vocab_size": 40, "lowrank_rank": 8, "chunk_norms": True},
    ],
)
def test_round_trip(target, tmp_path, overrides):
    drafter = make_drafter(target, **overrides)
    save_drafter(drafter, tmp_path, target=target)
    raw = json.loads((tmp_path / "config.json").read_text())
    assert raw["architectures"] == ["LlamaForCausalLMEagle3"] and raw["num_hidden_layers"] == 1
    assert raw["promptx"]["target_fingerprint"] == target_fingerprint(target)
    names = set(load_file(str(tmp_path / "model.safetensors")))
    assert {
        "fc.weight",
        "norm.weight",
        "midlayer.hidden_norm.weight",
        "midlayer.mlp.gate_proj.weight",
        "midlayer.self_attn.q_proj.weight",
    } <= names
    assert ("lm_head.weight" in names) == ("d2t" in names) == ("draft_vocab_size" in overrides)
    assert ("promptx.lowrank_down" in names) == ("lowrank_rank" in overrides)
    assert not any("embed" in n for n in names)
    loaded = load_drafter(tmp_path, target)
    assert loaded.config == replace(drafter.config, target_fingerprint=target_fingerprint(target))
    for a, b in zip(outputs(drafter), outputs(loaded)):
        assert torch.equal(a, b)


def write_plain_eagle3(directory, drafter, extra_config=None):
    """A checkpoint as the public EAGLE-3 trainers write it: no promptx key, public names only."""
    c = drafter.config
    directory.mkdir(parents=True, exist_ok=True)
    raw = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "num_hidden_layers": 1,
        "hidden_size": c.hidden_size,
        "num_attention_heads": c.num_attention_heads,
        "num_key_value_heads": c.num_key_value_heads,
        "intermediate_size": c.intermediate_size,
        "vocab_size": c.vocab_size,
        "draft_vocab_size": c.draft_vocab_size,
        "rms_norm_eps": c.rms_norm_eps,
        "rope_theta": c.rope_theta,
        "max_position_embeddings": c.max_position_embeddings,
        **(extra_config or {}),
    }
    (directory / "config.json").write_text(json.dumps(raw))
    save_file(
        {k: v.contiguous() for k, v in drafter.state_dict().items()},
        str(directory / "model.safetensors"),
    )


@pytest.mark.parametrize("draft_vocab", [128, 40])
def test_plain_eagle3_checkpoint_loads(target, tmp_path, draft_vocab):
    drafter = make_drafter(target, draft_vocab_size=draft_vocab)
    write_plain_eagle3(tmp_path, drafter)
    loaded = load_drafter(tmp_path, target)
    assert loaded.config.window is None and loaded.config.lowrank_rank is None
    assert (loaded.lm_head is None) == (draft_vocab == 128)
    for a, b in zip(outputs(drafter), outputs(loaded)):
        assert torch.equal(a, b)


def test_plain_eagle3_full_vocab_with_own_head(target, tmp_path):
    """Public full-vocabulary drafters may ship their own trained lm_head: it is used."""
    drafter = make_drafter(target)
    write_plain_eagle3(tmp_path, drafter)
    tensors = load_file(str(tmp_path / "model.safetensors"))
    tensors["lm_head.weight"] = torch.randn(128, 64)
    tensors["embed_tokens.weight"] = target.embed_tokens.weight.detach().clone()  # ignored
    save_file(tensors, str(tmp_path / "model.safetensors"))
    loaded = load_drafter(tmp_path, target)
    assert torch.equal(loaded.head_weight, tensors["lm_head.weight"])
    out = outputs(loaded)[0]
    assert torch.equal(loaded.topk(out[0], 3)[1], loaded.logprobs(out[0]).topk(3).indices)


def test_mismatched_targets_are_refused(target, tmp_path):
    save_drafter(make_drafter(target), tmp_path / "d", target=target)
    wider = make_target(cfg=ModelConfig(**{**CFG.__dict__, "hidden_size": 32, "head_dim": 8}))
    with pytest.raises(DrafterMismatchError, match="64.*32"):
        load_drafter(tmp_path / "d", wider)
    other_vocab = make_target(cfg=ModelConfig(**{**CFG.__dict__, "vocab_size": 100}))
    with pytest.raises(DrafterMismatchError, match="vocab_size is 128 but the target has 100"):
        load_drafter(tmp_path / "d", other_vocab)
    with pytest.raises(DrafterMismatchError, match="fingerprint"):
        load_drafter(tmp_path / "d", make_target(seed=5))
    assert load_drafter(tmp_path / "d").attached is False  # no target: loads, unattached


def test_fingerprint_is_stable(target):
    fp = target_fingerprint(target)
    assert len(fp) == 16 and fp == target_fingerprint(make_target())
    bf16 = make_target().to(torch.bfloat16)
    assert target_fingerprint(bf16) == fp and target_fingerprint(make_target(seed=9)) != fp


def test_d2t_outside_vocab_is_refused(target, tmp_path):
    drafter = make_drafter(target, draft_vocab_size=40)
    write_plain_eagle3(tmp_path, drafter)
    tensors = load_file(str(tmp_path / "model.safetensors"))
    tensors["d2t"][-1] = 500
    del tensors["t2d"]
    save_file(tensors, str(tmp_path / "model.safetensors"))
    with pytest.raises(DrafterMismatchError, match="outside the target vocabulary"):
        load_drafter(tmp_path, target)


def test_load_errors(target, tmp_path):
    with pytest.raises(DrafterLoadError, match="does not exist"):
        load_drafter(tmp_path / "nope")
    tmp_path.joinpath("empty").mkdir()
    with pytest.raises(DrafterLoadError, match="config.json"):
        load_drafter(tmp_path / "empty")
    save_drafter(make_drafter(target, draft_vocab_size=40), tmp_path / "d")
    tensors = load_file(str(tmp_path / "d" / "model.safetensors"))
    del tensors["midlayer.self_attn.o_proj.weight"], tensors["d2t"]
    save_file(tensors, str(tmp_path / "d" / "model.safetensors"))
    with pytest.raises(DrafterLoadError, match="d2t.*o_proj|lacks tensors"):
        load_drafter(tmp_path / "d", target)
    (tmp_path / "d" / "config.json").write_text("{not json")
    with pytest.raises(DrafterLoadError, match="cannot read"):
        load_drafter(tmp_path / "d")
    (tmp_path / "d" / "config.json").write_text(json.dumps({"hidden_size": 64}))
    with pytest.raises(DrafterLoadError, match="lacks the field"):
        load_drafter(tmp_path / "d")


def test_attach_checks_and_unattached_use(target):
    drafter = Drafter(DrafterConfig.for_target(target.config))
    with pytest.raises(RuntimeError, match="attach"):
        drafter(*inputs(2), drafter.new_cache(8))
    small = make_target(cfg=ModelConfig(**{**CFG.__dict__, "vocab_size": 64}))
    with pytest.raises(DrafterMismatchError):
        drafter.attach(small)
