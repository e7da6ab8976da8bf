"""Packed continuation scoring (engine.decode.scoring) against one plain forward per
continuation."""

from __future__ import annotations

import pytest
import torch

from engine.decode.scoring import ScoringGroup, score_continuations, score_groups
from tests.tiny import make_tiny_target


def _plain_logprob(model, prefix, continuation, skip=0) -> float:
    """The continuation's log-probability from one causal forward of prefix + continuation."""
    tokens = list(prefix) + list(continuation)
    cache = model.new_cache(capacity=len(tokens) + 1)
    logits = model(torch.tensor([tokens]), cache).logits[0].float()
    logp = torch.log_softmax(logits, dim=-1)
    return sum(
        float(logp[len(prefix) + j - 1, continuation[j]]) for j in range(skip, len(continuation))
    )


def test_packed_scores_equal_one_forward_per_continuation():
    model = make_tiny_target()
    prefix = [5, 17, 33, 2]
    continuations = [[7], [9, 10, 11], [40, 41], [100, 3, 8, 8, 20]]
    scores = score_continuations(model, prefix, continuations, scored_from=[0, 1, 0, 2])
    for score, cont, skip in zip(scores, continuations, [0, 1, 0, 2]):
        assert score.tokens == len(cont) - skip
        assert score.logprob == pytest.approx(_plain_logprob(model, prefix, cont, skip), abs=1e-4)


def test_groups_with_other_prefixes_do_not_see_each_other():
    model = make_tiny_target()
    a = ScoringGroup([1, 2, 3], [[4, 5], [6]])
    b = ScoringGroup([9, 8], [[4, 5], [7, 7, 7]], scored_from=[1, 0])
    together = score_groups(model, [a, b])
    alone = [score_groups(model, [a])[0], score_groups(model, [b])[0]]
    for got, want in zip(together, alone):
        assert [s.logprob for s in got] == pytest.approx([s.logprob for s in want], abs=1e-4)
    assert together[1][0].logprob == pytest.approx(
        _plain_logprob(model, [9, 8], [4, 5], 1), abs=1e-4
    )
    assert together[0][0].logprob != pytest.approx(together[1][0].logprob, abs=1e-3)


def test_bad_input_is_refused():
    model = make_tiny_target()
    with pytest.raises(ValueError):
        score_continuations(model, [], [[1]])
    with pytest.raises(ValueError):
        score_continuations(model, [1], [[]])
    with pytest.raises(ValueError):
        score_continuations(model, [1], [[2]], scored_from=[0, 0])
