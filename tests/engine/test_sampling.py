"""The sampler's shortcut (top candidates only) draws from the same distribution as the full one."""

from __future__ import annotations

import pytest
import torch

from engine.decode.sampling import (
    CANDIDATE_TIERS,
    CANDIDATES,
    SamplingParams,
    _candidate_distribution,
    make_generator,
    next_token_distribution,
    processed_logits,
    sample_token,
)


@pytest.mark.parametrize("size", CANDIDATE_TIERS)
@pytest.mark.parametrize("top_k", [0, 40, CANDIDATES, 600])
@pytest.mark.parametrize("top_p", [0.3, 0.9, 1.0])
def test_candidates_hold_exactly_the_full_distribution(top_k, top_p, size):
    torch.manual_seed(top_k + int(top_p * 10))
    used = 0
    for _ in range(40):
        logits = torch.randn(size * 12) * float(0.5 + 4 * torch.rand(1))
        params = SamplingParams(temperature=0.7, top_p=top_p, top_k=top_k, repetition_penalty=1.2)
        full = next_token_distribution(logits, [5, 9], params)
        candidates = _candidate_distribution(processed_logits(logits, [5, 9], params), params, size)
        if candidates is None:  # the set reaches past the candidates: the full path is used
            assert full.gt(0).sum() > size
            continue
        used += 1
        ids, probs = candidates
        restricted = torch.zeros_like(full).index_put_((ids,), probs)
        assert torch.allclose(restricted, full, atol=1e-6)
    if top_p < 1.0 or top_k == 40 or top_k == CANDIDATES:
        assert used > 0


def test_sample_token_follows_the_distribution():
    logits = torch.tensor([2.0, 1.0, 0.5, -1.0] + [-9.0] * 400)
    params = SamplingParams(temperature=1.0, top_p=0.95)
    expected = next_token_distribution(logits, [], params)[:4]
    gen = make_generator(0)
    draws = torch.bincount(
        torch.tensor([sample_token(logits, [], params, gen) for _ in range(4000)]), minlength=404
    )
    assert draws[4:].sum() == 0
    assert torch.allclose(draws[:4] / 4000, expected, atol=0.03)


def test_ties_at_the_edge_of_the_set_use_the_reference():
    logits = torch.tensor([3.0, 2.0, 1.0, 1.0, 1.0, -2.0] + [-9.0] * 600)
    assert _candidate_distribution(logits, SamplingParams(temperature=1.0, top_k=3)) is None
    bf16 = (torch.randn(5000) * 3).to(torch.bfloat16).float()  # bf16 logits tie often
    params = SamplingParams(temperature=1.0, top_p=0.9)
    candidates = _candidate_distribution(bf16, params)
    full = next_token_distribution(bf16, [], params)
    if candidates is not None:
        ids, probs = candidates
        assert torch.allclose(torch.zeros_like(full).index_put_((ids,), probs), full, atol=1e-6)
    gen = make_generator(1)
    tokens = {
        sample_token(logits, [], SamplingParams(temperature=1.0, top_k=3), gen) for _ in range(300)
    }
    assert tokens == {0, 1, 2, 3, 4}  # every tied token stays possible


def test_the_nucleus_keeps_every_token_tied_with_its_last_member():
    # 0.4 + 0.2 reaches top_p = 0.5 inside a group of three tied tokens: all three stay,
    # whatever order a sort puts them in
    probs = torch.tensor([0.4, 0.2, 0.2, 0.2])
    logits = torch.cat([probs.log(), torch.full((600,), -30.0)])
    params = SamplingParams(temperature=1.0, top_p=0.5)
    full = next_token_distribution(logits, [], params)
    assert torch.allclose(full[:4], probs, atol=1e-6) and full[4:].sum() == 0
    ids, cand = _candidate_distribution(processed_logits(logits, [], params), params)
    assert torch.allclose(torch.zeros_like(full).index_put_((ids,), cand), full, atol=1e-6)
    flat = torch.zeros(CANDIDATES + 50)  # the tied group reaches past the candidates
    assert _candidate_distribution(flat, params) is None
    assert next_token_distribution(flat, [], params).gt(0).all()
