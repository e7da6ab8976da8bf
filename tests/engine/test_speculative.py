"""Speculative decoding with the real embedded model: lossless greedy and sampling.

Two drafters: a randomly initialised one proposes poor drafts (tokens get
accepted only by luck: the rejection paths), the shipped trained one good
drafts (long accepted runs). What is tested is exactness, not speed.
"""

from __future__ import annotations

import pytest
import torch

from engine.decode.autoregressive import decode_autoregressive
from engine.decode.sampling import SamplingParams, next_token_distribution
from engine.decode.stats import DecodeStats
from engine.decode.stopping import StopChecker
from engine.speculative.drafter import Drafter, DrafterConfig
from engine.speculative.loop import FixedTree, TreeConfig, decode_speculative, verify_pass
from engine.speculative.tree import DraftTree
from engine.speculative.verify import verify_sampling

pytestmark = pytest.mark.slow

PROMPTS = [
    "a cat on a skateboard",
    "a lighthouse in a storm",
    "two astronauts playing chess on the moon",
    "a bowl of ramen, steam rising",
    "a fox running through snow",
    "an old man reading in a library",
    "a neon city street in the rain",
    "a hummingbird drinking from a flower",
    "a castle on a cliff at sunset",
    "a child flying a red kite on a beach",
    "a samurai under cherry blossoms",
    "a busy market in Marrakesh",
]
CONFIGS = [
    TreeConfig.chain(4),
    TreeConfig(budget=8, max_depth=4, top_k=2),
    TreeConfig(budget=16, max_depth=5, top_k=4),
]


@pytest.fixture(scope="module")
def drafter(fp32_model):
    model, _ = fp32_model
    torch.manual_seed(1234)
    config = DrafterConfig.for_target(model.config, window=64, draft_vocab_size=4096)
    draft = Drafter(config)
    draft.set_vocab_map(torch.arange(4096))
    return draft.attach(model).eval()


def prompt_ids(tok, prompt):
    return tok.encode_chat(
        [{"role": "user", "content": f"Write a detailed video prompt: {prompt}"}]
    )


def reference(model, tok, ids, params):
    return list(
        decode_autoregressive(
            model, ids, params, StopChecker(tok.eos_token_ids, params.max_new_tokens)
        )
    )


def speculative(model, drafter, tok, ids, params, config):
    stats = DecodeStats()
    stop = StopChecker(tok.eos_token_ids, params.max_new_tokens)
    chunks = list(decode_speculative(model, drafter, ids, params, stop, stats, FixedTree(config)))
    return [t for c in chunks for t in c], stats


@pytest.mark.parametrize("index", range(len(PROMPTS)))
def test_greedy_speculative_equals_reference(fp32_model, drafter, trained_drafter, index):
    """12 prompts x 128 tokens; each prompt under one config (rotating chain / tree 8 / tree 16) and
    one drafter (random on odd prompts, trained on even ones: every config meets both)."""
    model, tok = fp32_model
    params = SamplingParams(max_new_tokens=128, repetition_penalty=1.1 if index % 4 >= 2 else 1.0)
    ids = prompt_ids(tok, PROMPTS[index])
    expected = reference(model, tok, ids, params)
    chosen = drafter if index % 2 else trained_drafter
    got, stats = speculative(model, chosen, tok, ids, params, CONFIGS[index % len(CONFIGS)])
    assert got == expected
    assert stats.new_tokens == len(expected) and stats.target_forwards >= 1
    assert sum(stats.accepted_lengths) + stats.target_forwards + 1 >= stats.new_tokens


def test_every_config_on_one_prompt_and_exact_budget(fp32_model, drafter):
    model, tok = fp32_model
    params = SamplingParams(max_new_tokens=37)
    ids = prompt_ids(tok, PROMPTS[0])
    expected = reference(model, tok, ids, params)
    assert len(expected) == 37
    for config in CONFIGS + [TreeConfig(budget=0, max_depth=1, top_k=1)]:
        assert speculative(model, drafter, tok, ids, params, config)[0] == expected
    one, stats = speculative(model, drafter, tok, ids, SamplingParams(max_new_tokens=1), CONFIGS[0])
    assert one == expected[:1] and stats.new_tokens == 1 and stats.finish_reason == "length"


def test_sampled_speculative_is_seeded(fp32_model, drafter):
    model, tok = fp32_model
    params = SamplingParams(temperature=0.8, top_p=0.9, max_new_tokens=20, seed=5)
    ids = prompt_ids(tok, PROMPTS[1])
    first, _ = speculative(model, drafter, tok, ids, params, CONFIGS[2])
    again, _ = speculative(model, drafter, tok, ids, params, CONFIGS[2])
    assert first == again, (first, again)
    assert 0 < len(first) <= 20


def chi_square_p_value(counts: dict, probs: dict, n: int) -> float:
    """Pearson chi-square test, rare outcomes (expected < 5) pooled into one bin."""
    if any(probs.get(token, 0.0) == 0.0 for token in counts):
        return 0.0  # an impossible token was produced
    observed, expected, rest_obs, rest_exp = [], [], 0.0, 0.0
    for token in set(probs) | set(counts):
        e, o = probs.get(token, 0.0) * n, counts.get(token, 0)
        if e >= 5:
            observed.append(o), expected.append(e)
        else:
            rest_obs, rest_exp = rest_obs + o, rest_exp + e
    if rest_exp > 0:
        observed.append(rest_obs), expected.append(rest_exp)
    stat = sum((o - e) ** 2 / e for o, e in zip(observed, expected))
    dof = len(observed) - 1
    if dof == 0:
        return 1.0  # a single possible outcome, and only it was seen
    return float(
        torch.special.gammaincc(
            torch.tensor(dof / 2, dtype=torch.float64), torch.tensor(stat / 2, dtype=torch.float64)
        )
    )


def test_sampling_keeps_the_target_distribution(fp32_model):
    """A good draft tree (the target's own top tokens) on real logits: the first two tokens
    sampled through tree verification follow the target's distribution (chi-square)."""
    model, tok = fp32_model
    params = SamplingParams(temperature=0.8, top_p=0.9, max_new_tokens=8)
    ids = prompt_ids(tok, PROMPTS[2])
    cache = model.new_cache(len(ids) + 32)
    prefix = model(torch.tensor([ids[:-1]]), cache)
    cache.commit(len(ids) - 1)
    root = ids[-1]
    root_p = next_token_distribution(model(torch.tensor([[root]]), cache).logits[0, -1], [], params)
    first = root_p.topk(3).indices.tolist()
    grand = []
    probe = DraftTree(torch.tensor(first), torch.full((3,), -1), torch.zeros(3))
    probe_logits, _, _ = verify_pass(model, cache, root, probe)
    for i, token in enumerate(first):
        grand.append(
            next_token_distribution(probe_logits[i + 1], [token], params).topk(2).indices.tolist()
        )
    tokens = first + [t for pair in grand for t in pair]
    parents = [-1, -1, -1, 0, 0, 1, 1, 2, 2]
    tree = DraftTree(torch.tensor(tokens), torch.tensor(parents), -torch.arange(9.0))
    logits, _, _ = verify_pass(model, cache, root, tree)
    assert prefix.logits is not None

    n = 2000
    generator = torch.Generator().manual_seed(0)
    firsts, seconds = {}, {t: {} for t in first}
    for _ in range(n):
        result = verify_sampling(tree, logits, [], params, generator)
        x1 = result.tokens[0]
        firsts[x1] = firsts.get(x1, 0) + 1
        if len(result.tokens) > 1:
            seconds[x1][result.tokens[1]] = seconds[x1].get(result.tokens[1], 0) + 1
    p1 = next_token_distribution(logits[0], [], params)
    assert chi_square_p_value(firsts, {i: float(v) for i, v in enumerate(p1) if v > 0}, n) > 1e-3
    for node, token in enumerate(first):
        counts = seconds[token]
        total = sum(counts.values())
        assert total == firsts.get(token, 0)
        if total < 200:
            continue
        p2 = next_token_distribution(logits[node + 1], [token], params)
        assert (
            chi_square_p_value(counts, {i: float(v) for i, v in enumerate(p2) if v > 0}, total)
            > 1e-3
        )


def test_a_stop_predicate_ends_speculative_and_plain_decoding_at_the_same_token(
    fp32_model, drafter
):
    model, tok = fp32_model
    params = SamplingParams(max_new_tokens=60)
    ids = prompt_ids(tok, PROMPTS[1])
    words = lambda tokens: len(tok.decode(tokens).split()) > 12  # noqa: E731

    def run(decode):
        stop = StopChecker(tok.eos_token_ids, params.max_new_tokens, stop_if=words)
        return [
            t for chunk in decode(stop) for t in (chunk if isinstance(chunk, list) else [chunk])
        ], stop

    plain, plain_stop = run(lambda stop: decode_autoregressive(model, ids, params, stop))
    spec, spec_stop = run(
        lambda stop: decode_speculative(
            model, drafter, ids, params, stop, DecodeStats(), FixedTree(CONFIGS[2])
        )
    )
    assert plain == spec and plain_stop.finish_reason == spec_stop.finish_reason == "budget"
    assert (
        len(tok.decode(plain[:-1]).split()) <= 12 < len(tok.decode(plain).split())
        and len(plain) < 60
    )
