"""Tests of engine.speculative.tree: DraftTree structure, EAGLE-2 rerank and expansion."""

from __future__ import annotations

import math
import random

import pytest
import torch

from engine.speculative.tree import DraftTree, TreeExpansion, select_top_nodes


def hand_tree() -> DraftTree:
    #        root
    #       /    \
    #   0:10     1:11
    #   /   \
    # 2:12  3:13
    #  |
    # 4:14
    return DraftTree(
        torch.tensor([10, 11, 12, 13, 14]),
        torch.tensor([-1, -1, 0, 0, 2]),
        torch.tensor([-0.1, -0.5, -0.3, -0.2, -0.6]),
    )


def test_hand_tree_structure():
    tree = hand_tree()
    assert tree.size == 5 and tree.max_depth == 3
    assert tree.depths.tolist() == [1, 1, 2, 2, 3]
    assert tree.root_children == [0, 1]
    assert tree.children == [[3, 2], [], [4], [], []]  # decreasing score
    assert tree.leaf_paths() == [[1], [0, 3], [0, 2, 4]]
    expected = torch.tensor(
        [[1, 0, 0, 0, 0], [0, 1, 0, 0, 0], [1, 0, 1, 0, 0], [1, 0, 0, 1, 0], [1, 0, 1, 0, 1]],
        dtype=torch.bool,
    )
    assert torch.equal(tree.ancestor_mask, expected)
    assert torch.equal(tree.ancestor_mask.sum(1), tree.depths)
    assert tree.positions(7).tolist() == [8, 8, 9, 9, 10]
    with_root = tree.mask_with_root()
    assert with_root.shape == (6, 6) and with_root[:, 0].all()
    assert torch.equal(with_root[1:, 1:], expected) and not with_root[0, 1:].any()


def test_chain_and_empty():
    chain = DraftTree.chain([4, 5, 6], [-0.1, -0.2, -0.4])
    assert chain.parents.tolist() == [-1, 0, 1]
    assert chain.depths.tolist() == [1, 2, 3]
    assert torch.equal(chain.ancestor_mask, torch.ones(3, 3, dtype=torch.bool).tril())
    assert chain.leaf_paths() == [[0, 1, 2]]
    empty = DraftTree.empty()
    assert empty.size == 0 and empty.max_depth == 0 and empty.leaf_paths() == []
    assert empty.ancestor_mask.shape == (0, 0)


@pytest.mark.parametrize(
    "tokens, parents, scores",
    [
        ([1, 2], [-1, 1], [0.0, 0.0]),  # parent not before child
        ([1, 2], [-1, -2], [0.0, 0.0]),  # bad parent id
        ([1, 2], [-1, 0], [0.0]),  # shape mismatch
        ([1, 1], [-1, -1], [0.0, -1.0]),  # siblings repeat a token
    ],
)
def test_invalid_trees_raise(tokens, parents, scores):
    with pytest.raises(ValueError):
        DraftTree(torch.tensor(tokens), torch.tensor(parents), torch.tensor(scores))


def random_pool(rng: random.Random, size: int, monotone: bool = True):
    """A pool in generation order; scores quantised so that ties are common."""
    parents, scores = [], []
    for i in range(size):
        parent = rng.randrange(-1, i)
        step = rng.choice([0.0, -0.5, -1.0]) if monotone else rng.choice([0.5, 0.0, -1.0])
        parents.append(parent)
        scores.append((scores[parent] if parent >= 0 else 0.0) + step)
    tokens = list(range(100, 100 + size))  # distinct, so siblings never clash
    return tokens, parents, scores


def assert_connected_topological(tree: DraftTree):
    parents = tree.parents.tolist()
    assert all(-1 <= p < i for i, p in enumerate(parents))  # DraftTree enforces it too


@pytest.mark.parametrize("seed", range(60))
def test_select_top_nodes_property(seed):
    rng = random.Random(seed)
    size = rng.randrange(1, 40)
    budget = rng.randrange(0, 45)
    tokens, parents, scores = random_pool(rng, size)
    tree = select_top_nodes(
        torch.tensor(tokens), torch.tensor(parents), torch.tensor(scores), budget
    )
    assert tree.size == min(budget, size)
    assert_connected_topological(tree)
    kept = tree.pool_indices.tolist()
    assert kept == sorted(kept)
    # monotone scores: exactly the top-budget set by (score desc, index asc)
    ranking = sorted(range(size), key=lambda i: (-scores[i], i))
    assert set(kept) == set(ranking[:budget])
    # re-indexing keeps tokens, scores and parent links
    for new, pool in enumerate(kept):
        assert tree.token_list[new] == tokens[pool]
        assert tree.scores[new].item() == pytest.approx(scores[pool])
        parent = tree.parents[new].item()
        assert (kept[parent] if parent >= 0 else -1) == parents[pool]


@pytest.mark.parametrize("seed", range(20))
def test_select_top_nodes_connected_even_when_child_outscores_parent(seed):
    rng = random.Random(1000 + seed)
    size = rng.randrange(2, 40)
    budget = rng.randrange(1, size + 1)
    tokens, parents, scores = random_pool(rng, size, monotone=False)
    tree = select_top_nodes(tokens, parents, scores, budget)
    assert tree.size == budget
    assert_connected_topological(tree)


def test_select_top_nodes_skips_minus_inf():
    tree = select_top_nodes([1, 2, 3], [-1, -1, 0], [-0.5, -math.inf, -math.inf], 3)
    assert tree.pool_indices.tolist() == [0]


def test_expansion_hand_checked():
    # k=2, depth 2, budget 4; probabilities chosen so no scores tie
    exp = TreeExpansion(budget=4, max_depth=2, top_k=2)
    exp.start(torch.tensor([0.6, 0.35]).log(), torch.tensor([5, 7]))
    idx, toks, par, dep = exp.frontier()
    assert idx.tolist() == [0, 1] and toks.tolist() == [5, 7]
    assert par.tolist() == [-1, -1] and dep.tolist() == [1, 1]
    assert not exp.done
    exp.extend(torch.tensor([[0.5, 0.3], [0.8, 0.1]]).log(), torch.tensor([[1, 2], [3, 4]]))
    assert exp.done and exp.pool_size == 6
    # pool: 0:5 (.6) 1:7 (.35) 2:1 (.30) 3:2 (.18) 4:3 (.28) 5:4 (.035)
    _, _, scores, depths = exp.pool()
    assert torch.allclose(scores.exp(), torch.tensor([0.6, 0.35, 0.30, 0.18, 0.28, 0.035]))
    assert depths.tolist() == [1, 1, 2, 2, 2, 2]
    idx, toks, par, dep = exp.frontier()
    assert idx.tolist() == [2, 4] and toks.tolist() == [1, 3]
    assert par.tolist() == [0, 1] and dep.tolist() == [2, 2]
    mask = exp.frontier_ancestor_mask(idx)
    assert mask.tolist() == [
        [True, False, True, False, False, False],
        [False, True, False, False, True, False],
    ]
    tree = exp.finish()
    assert tree.pool_indices.tolist() == [0, 1, 2, 4]
    assert tree.token_list == [5, 7, 1, 3]
    assert tree.parents.tolist() == [-1, -1, 0, 1]
    with pytest.raises(RuntimeError):
        exp.extend(torch.zeros(2, 2), torch.zeros(2, 2, dtype=torch.long))


def synthetic_drafter(path: tuple[int, ...], vocab: int = 20) -> torch.Tensor:
    """Fixed random log-probs [V] as a function of the path."""
    gen = torch.Generator().manual_seed(hash(path) % (2**31))
    return torch.log_softmax(2 * torch.randn(vocab, generator=gen), -1)


def run_expansion(budget: int, depth: int, k: int):
    exp = TreeExpansion(budget, depth, k)
    exp.start(*torch.topk(synthetic_drafter(()), k))
    paths = {}
    while not exp.done:
        idx, _, _, _ = exp.frontier()
        tokens, parents, _, _ = exp.pool()
        rows = []
        for i in idx.tolist():
            path, node = [], i
            while node >= 0:
                path.append(tokens[node].item())
                node = parents[node].item()
            paths[i] = tuple(path[::-1])
            rows.append(synthetic_drafter(paths[i]))
        yield exp, idx
        exp.extend(*torch.topk(torch.stack(rows), k, dim=-1))
    yield exp, None


def test_expansion_matches_brute_force_and_masks():
    k, depth, budget = 3, 4, 12
    for exp, idx in run_expansion(budget, depth, k):
        if idx is None:
            break
        _, parents, scores, depths = exp.pool()
        mask = exp.frontier_ancestor_mask(idx)
        assert mask.shape == (idx.numel(), exp.pool_size)
        for row, node in enumerate(idx.tolist()):
            expected = set()
            while node >= 0:
                expected.add(node)
                node = parents[node].item()
            assert set(mask[row].nonzero().flatten().tolist()) == expected
        assert (depths[idx] == exp.depth).all()
    tokens, parents, scores, depths = exp.pool()
    assert exp.pool_size == k + (depth - 1) * k * k
    # child score = parent score + its draft log-prob
    for i in range(exp.pool_size):
        p = parents[i].item()
        assert (scores[p] if p >= 0 else 0.0) >= scores[i] - 1e-6
    tree = exp.finish()
    assert tree.size == budget
    ranking = sorted(range(exp.pool_size), key=lambda i: (-scores[i].item(), i))
    assert set(tree.pool_indices.tolist()) == set(ranking[:budget])


def test_chain_expansion_is_top1():
    exp = None
    for exp, _ in run_expansion(budget=5, depth=5, k=1):
        pass
    tree = exp.finish()
    assert tree.parents.tolist() == [-1, 0, 1, 2, 3]
    path = ()
    for token in tree.token_list:
        assert token == int(synthetic_drafter(path).argmax())
        path += (token,)
