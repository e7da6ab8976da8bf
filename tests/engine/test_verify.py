"""Tests of engine.speculative.verify: greedy exactness and sampled losslessness.

The lossless tests run verification rounds against a synthetic target (fixed
random logits per path) and compare the empirical distribution of the first
token and of the first two tokens with the exact one from
``next_token_distribution`` (chi-square, survival function via
``torch.special.gammaincc``; no scipy needed).
"""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from engine.decode.sampling import (
    SamplingParams,
    greedy_token,
    make_generator,
    next_token_distribution,
    sample_from,
)
from engine.speculative.tree import DraftTree, TreeExpansion
from engine.speculative.verify import VerifyResult, verify, verify_greedy, verify_sampling

VOCAB = 10


def path_logits(path: tuple[int, ...], salt: int = 0, vocab: int = VOCAB) -> torch.Tensor:
    """Fixed random logits [V] as a function of the path (the synthetic target)."""
    gen = torch.Generator().manual_seed((hash(path) + 7919 * salt) % (2**31))
    return 2.0 * torch.randn(vocab, generator=gen)


def node_path(tree: DraftTree, node: int) -> tuple[int, ...]:
    return tuple(tree.token_list[i] for i in tree.path_to(node))


def target_rows(tree: DraftTree, prefix: tuple[int, ...]) -> torch.Tensor:
    """Target logits [N+1, V]: after the root, then after each node."""
    rows = [path_logits(prefix)] + [
        path_logits(prefix + node_path(tree, i)) for i in range(tree.size)
    ]
    return torch.stack(rows)


def draft_tree(prefix: tuple[int, ...], drafter, budget=6, depth=3, k=2) -> DraftTree:
    """EAGLE-2 tree from a deterministic drafter: path -> log-probs [V]."""
    exp = TreeExpansion(budget, depth, k)
    exp.start(*torch.topk(drafter(prefix), k))
    while not exp.done:
        idx, _, _, _ = exp.frontier()
        tokens, parents, _, _ = exp.pool()
        rows = []
        for node in idx.tolist():
            path = []
            while node >= 0:
                path.append(tokens[node].item())
                node = parents[node].item()
            rows.append(drafter(prefix + tuple(path[::-1])))
        exp.extend(*torch.topk(torch.stack(rows), k, dim=-1))
    return exp.finish()


def good_drafter(path):  # close to the target
    return torch.log_softmax(path_logits(path) + 0.7 * path_logits(path, salt=1), -1)


def bad_drafter(path):  # never proposes the target's favourite: low but nonzero p
    logits = path_logits(path).clone()
    logits[logits.argmax()] = float("-inf")
    return torch.log_softmax(logits, -1)


def zero_mass_drafter(path):  # proposes the target's least likely tokens (p = 0 after top-k/top-p)
    return torch.log_softmax(-path_logits(path), -1)


# ---------------------------------------------------------------- greedy


def one_hot_logits(rows: list[dict[int, float]], vocab: int = 6) -> torch.Tensor:
    out = torch.zeros(len(rows), vocab)
    for r, values in enumerate(rows):
        for token, value in values.items():
            out[r, token] = value
    return out


def penalty_tree() -> DraftTree:
    #          root
    #        /      \
    #     0:1       1:2
    #      |
    #     2:3
    #   /  |  \
    # 3:1 4:2 5:4
    return DraftTree(
        torch.tensor([1, 2, 3, 1, 2, 4]),
        torch.tensor([-1, -1, 0, 2, 2, 2]),
        torch.tensor([-0.1, -0.2, -0.3, -0.4, -0.5, -0.6]),
    )


def penalty_logits() -> torch.Tensor:
    return one_hot_logits(
        [
            {1: 5.0},  # row 0 (root): token 1
            {3: 5.0},  # after node 0: token 3
            {0: 5.0},  # after node 1 (not walked)
            {1: 2.2, 2: 2.1, 4: 1.9},  # after node 2: the penalty decides
            {0: 3.0},  # after node 3
            {5: 3.0},  # after node 4
            {3: 3.0},  # after node 5
        ]
    )


def test_greedy_accepts_matching_path_and_bonus():
    result = verify_greedy(penalty_tree(), penalty_logits(), [], SamplingParams())
    assert result.accepted_nodes == [0, 2, 3]
    assert result.tokens == [1, 3, 1, 0]
    assert result.bonus_row == 4
    assert result.kept_rows == [0, 1, 3, 4] and result.num_accepted == 3


def test_greedy_repetition_penalty_uses_own_path_only():
    params = SamplingParams(repetition_penalty=1.5)
    result = verify_greedy(penalty_tree(), penalty_logits(), [], params)
    # node 2's path holds token 1 (penalised: 2.2 -> 1.47); token 2 only sits
    # in the sibling branch (node 1), so it keeps 2.1 and wins. Counting the
    # sibling would pick token 4 (node 5).
    assert result.accepted_nodes == [0, 2, 4]
    assert result.tokens == [1, 3, 2, 5]
    assert result.bonus_row == 5


def test_greedy_history_counts_at_root():
    tree = penalty_tree()
    logits = penalty_logits()
    logits[0, 2] = 4.0  # root: token 1 (5.0) vs token 2 (4.0)
    logits[2] = one_hot_logits([{3: 1.0}])[0]
    result = verify_greedy(tree, logits, [1], SamplingParams(repetition_penalty=1.5))
    assert result.accepted_nodes == [1] and result.tokens == [2, 3] and result.bonus_row == 2


def test_greedy_nothing_accepted_and_empty_tree():
    tree = penalty_tree()
    logits = penalty_logits()
    logits[0] = one_hot_logits([{5: 1.0}])[0]
    assert verify_greedy(tree, logits, [], SamplingParams()) == VerifyResult([], [5], 0)
    empty = verify_greedy(DraftTree.empty(), logits[:1], [], SamplingParams())
    assert empty == VerifyResult([], [5], 0)


def test_wrong_logit_rows_raise():
    with pytest.raises(ValueError):
        verify_greedy(penalty_tree(), torch.zeros(6, 6), [], SamplingParams())


@pytest.mark.parametrize("penalty", [1.0, 1.3])
def test_greedy_decode_equals_reference(penalty):
    params = SamplingParams(repetition_penalty=penalty)
    history = [4]
    reference = list(history)
    for _ in range(30):
        reference.append(greedy_token(path_logits(tuple(reference[1:])), reference, params))
    out = list(history)
    rounds = 0
    while len(out) < len(reference):
        prefix = tuple(out[1:])
        tree = draft_tree(prefix, good_drafter, budget=8, depth=4, k=3)
        result = verify(tree, target_rows(tree, prefix), out, params)
        out += result.tokens
        rounds += 1
    assert out[: len(reference)] == reference
    assert rounds < 30  # some draft tokens were accepted


# ---------------------------------------------------------------- sampling

PARAMS = SamplingParams(temperature=0.8, top_p=0.9, top_k=6, repetition_penalty=1.2)
HISTORY = (2,)


def exact_joint(params: SamplingParams) -> torch.Tensor:
    """P(first, second) [V, V] of the reference decoder."""
    first = next_token_distribution(path_logits(()), list(HISTORY), params)
    second = torch.stack(
        [next_token_distribution(path_logits((a,)), [*HISTORY, a], params) for a in range(VOCAB)]
    )
    return first[:, None] * second


def speculative_pairs(drafter, params: SamplingParams, draws: int, seed: int):
    """Counter of the first two tokens over ``draws`` runs, and tokens per round.

    Each run is one verification round from the empty prefix; when it yields
    a single token the second comes from the reference decoder's step (what
    the next round must reproduce, which the first-token check covers).
    """
    generator = make_generator(seed)
    tree = draft_tree((), drafter)
    logits = target_rows(tree, ())
    continuation = [
        next_token_distribution(path_logits((a,)), [*HISTORY, a], params) for a in range(VOCAB)
    ]
    counts: Counter = Counter()
    emitted = 0
    for _ in range(draws):
        out = verify_sampling(tree, logits, list(HISTORY), params, generator).tokens
        emitted += len(out)
        if len(out) == 1:
            out = out + [sample_from(continuation[out[0]], generator)]
        counts[tuple(out[:2])] += 1
    return counts, emitted / draws


def chi_square_pvalue(counts: dict, expected_probs: dict, draws: int) -> float:
    """Pearson chi-square p-value; cells expecting < 5 are pooled. Impossible outcomes fail."""
    impossible = [cell for cell in counts if expected_probs.get(cell, 0.0) <= 0.0]
    assert not impossible, f"outcomes with zero probability were produced: {impossible}"
    observed, expected = [], []
    pooled_obs, pooled_exp = 0, 0.0
    for cell, prob in expected_probs.items():
        if prob * draws >= 5:
            observed.append(counts.get(cell, 0))
            expected.append(prob * draws)
        else:
            pooled_obs += counts.get(cell, 0)
            pooled_exp += prob * draws
    if pooled_exp > 0:
        observed.append(pooled_obs)
        expected.append(pooled_exp)
    obs = torch.tensor(observed, dtype=torch.float64)
    exp = torch.tensor(expected, dtype=torch.float64)
    stat = ((obs - exp) ** 2 / exp).sum()
    dof = torch.tensor((len(observed) - 1) / 2, dtype=torch.float64)
    return float(torch.special.gammaincc(dof, stat / 2))


def check_lossless(drafter, params: SamplingParams, draws: int, seed: int) -> float:
    counts, tokens_per_round = speculative_pairs(drafter, params, draws, seed)
    joint = exact_joint(params)
    cells = {(a, b): float(joint[a, b]) for a in range(VOCAB) for b in range(VOCAB)}
    assert chi_square_pvalue(counts, cells, draws) > 1e-4
    first = Counter()
    for (a, _), n in counts.items():
        first[a] += n
    marginal = {(a,): float(p) for a, p in enumerate(joint.sum(1))}
    assert chi_square_pvalue({(a,): n for a, n in first.items()}, marginal, draws) > 1e-4
    return tokens_per_round


# Draw counts balance power against run time on a shared 2-core machine: at
# 8000 draws a 0.02 shift of a cell holding 30% of the mass is ~4 sigma.
NO_PENALTY = SamplingParams(temperature=0.8, top_p=0.9, top_k=6)


def test_sampling_lossless_good_draft():
    tokens_per_round = check_lossless(good_drafter, NO_PENALTY, draws=8000, seed=1)
    assert tokens_per_round > 1.3  # the tree path is really exercised


def test_sampling_lossless_with_repetition_penalty():
    # node distributions depend on each node's own path through the penalty
    tokens_per_round = check_lossless(good_drafter, PARAMS, draws=2500, seed=4)
    assert tokens_per_round > 1.3


def test_sampling_lossless_bad_draft():
    # children get rejected with positive mass: renormalised residuals matter
    tokens_per_round = check_lossless(bad_drafter, NO_PENALTY, draws=3000, seed=2)
    assert 1.0 < tokens_per_round < 1.6


def test_sampling_lossless_zero_mass_draft():
    tokens_per_round = check_lossless(zero_mass_drafter, NO_PENALTY, draws=1500, seed=3)
    assert tokens_per_round == 1.0  # nothing can be accepted


def test_chi_square_detects_a_wrong_distribution():
    # power of the check itself: moving 0.02 of mass (TV = 0.02) fails at 8000 draws
    first = exact_joint(NO_PENALTY).sum(1)
    top, second = first.topk(2).indices.tolist()
    biased = first.clone()
    biased[top] -= 0.02
    biased[second] += 0.02
    draws = 8000
    samples = torch.multinomial(biased, draws, replacement=True, generator=make_generator(3))
    counts = Counter((int(a),) for a in samples)
    marginal = {(a,): float(p) for a, p in enumerate(first)}
    assert chi_square_pvalue(counts, marginal, draws) < 1e-4


def test_sampling_one_hot_target():
    # top_k=1 makes p one-hot: its child is always accepted, others never
    params = SamplingParams(temperature=1.0, top_k=1)
    tree = penalty_tree()
    logits = penalty_logits()
    generator = make_generator(0)
    for _ in range(50):
        result = verify_sampling(tree, logits, [], params, generator)
        assert result == VerifyResult([0, 2, 3], [1, 3, 1, 0], 4)
    logits[0] = one_hot_logits([{5: 1.0}])[0]  # no root child matches
    assert verify_sampling(tree, logits, [], params, generator) == VerifyResult([], [5], 0)


def test_sampling_is_reproducible_with_seed():
    prefix = ()
    tree = draft_tree(prefix, good_drafter)
    logits = target_rows(tree, prefix)
    runs = [
        [verify_sampling(tree, logits, list(HISTORY), PARAMS, gen).tokens for _ in range(20)]
        for gen in (make_generator(5), make_generator(5))
    ]
    assert runs[0] == runs[1]


def test_verify_dispatch_needs_generator_when_sampling():
    tree = penalty_tree()
    with pytest.raises(ValueError):
        verify(tree, penalty_logits(), [], PARAMS)
    assert verify(tree, penalty_logits(), [], SamplingParams()).tokens == [1, 3, 1, 0]


def test_rejection_by_rounding_still_accepts(monkeypatch):
    # p's float32 sum exceeds its entries' exact sum, so with u close to 1 both
    # children are "rejected" although they hold all the mass: the residual is
    # empty and the last child with mass must be taken instead of sampling
    # from zeros.
    from engine.speculative.verify import _try_children

    p = torch.tensor([0.00026337665622122586, 0.9997366070747375])
    assert float(p.sum()) - float(p[0]) > float(p[1])
    tree = DraftTree(torch.tensor([0, 1]), torch.tensor([-1, -1]), torch.tensor([-0.1, -0.2]))
    monkeypatch.setattr(
        torch, "rand", lambda n, **kw: torch.full((n,), 1 - 1e-10, dtype=torch.float64)
    )
    child, _ = _try_children(tree, -1, p, make_generator(0))
    assert child == 1
