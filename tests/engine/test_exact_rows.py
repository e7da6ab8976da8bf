"""Exact half precision: aligned key spans, lane-aligned tree slots, padded small passes.

The bf16 end-to-end check (speculative == plain, real model) is in
tests/promptx/test_shipped_drafter.py; these are the parts, on a tiny model.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from engine.runtime.exact_rows import (
    LANE_STRIDE,
    ROW_COUNTS,
    PaddedLinear,
    make_rows_exact,
    min_exact_rows,
)
from engine.runtime.kv_cache import KEY_ALIGN, KVCache, aligned
from engine.runtime.layout import TreeLayout
from engine.runtime.model import RowwiseAttention, aligned_mask
from engine.speculative.loop import tree_room, tree_slots
from tests.tiny import make_tiny_target


def test_tree_slots_put_every_node_in_the_lane_of_its_position_after_its_ancestors():
    """Distinct slots, each congruent to its position, growing along every path (a node whose
    ancestor sat in a later column summed its keys out of order: a bf16 flip in a real decode)."""
    from engine.speculative.tree import DraftTree

    gen = torch.Generator().manual_seed(0)
    for trial in range(200):
        n = int(torch.randint(1, 40, (1,), generator=gen))
        parents = [int(torch.randint(-1, i, (1,), generator=gen)) for i in range(n)]  # topological
        tree = DraftTree(torch.arange(n), parents, torch.zeros(n))
        depths = tree.depths_with_root()
        assert tree_slots(depths, tree.parents, 40, 0).tolist() == list(range(40, 41 + n))
        slots = tree_slots(depths, tree.parents, 40, LANE_STRIDE)
        assert slots[0] == 40 and len(set(slots.tolist())) == n + 1
        assert ((slots - (40 + depths)) % LANE_STRIDE == 0).all()
        assert all(slots[p + 1] < slots[i + 1] for i, p in enumerate(parents))
        assert int(slots.max()) - 40 < tree_room(n, TreeLayout(LANE_STRIDE))
    # the tree of the real-model case: the path 1 -> 5 -> 14 left column 1 for column 0
    parents = [-1, -1, -1, -1, 0, 1, 1, 1, 1, 2, 2, 3, 3, 3, 5, 9]
    tree = DraftTree(torch.arange(16), parents, torch.zeros(16))
    slots = tree_slots(tree.depths_with_root(), tree.parents, 149, LANE_STRIDE).tolist()
    assert slots[2] < slots[6] < slots[15]


def test_masks_widen_to_an_aligned_span_of_masked_keys():
    assert aligned_mask(None, 0, 5, "cpu") is None  # first prompt pass stays causal
    step = aligned_mask(None, 70, 1, "cpu")
    assert step.shape == (1, aligned(71)) and step.shape[1] % KEY_ALIGN == 0
    assert step[0, :71].all() and not step[0, 71:].any()
    tree = torch.ones(3, 150, dtype=torch.bool)
    assert aligned_mask(tree, 100, 3, "cpu").shape == (3, aligned(150))


def test_cache_writes_at_scattered_slots_and_returns_the_span():
    cache = KVCache(1, 1, 1, 2, 100, torch.float32, spans=True)
    assert cache.k.shape[3] == aligned(100)
    k = torch.arange(6.0).view(1, 1, 3, 2)
    keys, _ = cache.write(0, 10, k, k, span=64, slots=torch.tensor([10, 27, 44]))
    assert (
        keys.shape[2] == 64 and torch.equal(keys[0, 0, 27], k[0, 0, 1]) and not keys[0, 0, 11].any()
    )


def test_half_precision_models_become_exact_and_fp32_ones_stay():
    fp32 = make_tiny_target()
    make_rows_exact(fp32)
    assert fp32.layout == TreeLayout() and not any(
        isinstance(m, PaddedLinear) for m in fp32.modules()
    )
    half = make_tiny_target().to(torch.bfloat16)
    half.dtype = torch.bfloat16
    make_rows_exact(half)
    assert half.layout.lane_stride == LANE_STRIDE
    assert any(isinstance(m, PaddedLinear) for m in half.modules())
    assert all(type(layer.self_attn) is RowwiseAttention for layer in half.layers)


def test_a_padded_pass_gives_each_row_what_a_pass_of_the_minimum_size_gives():
    torch.manual_seed(0)
    linear = torch.nn.Linear(96, 80, bias=False, dtype=torch.bfloat16)
    need = min_exact_rows(linear.weight)
    assert need in ROW_COUNTS
    linear.__class__ = PaddedLinear
    x = torch.randn(1, 96).to(torch.bfloat16)
    padded = torch.cat([x, x.new_zeros(max(need, 1) - 1, 96)])
    assert torch.equal(linear(x[None])[0], F.linear(padded, linear.weight)[:1])


def test_nodes_that_would_cross_a_key_block_are_not_verified():
    from engine.runtime.exact_rows import KEY_BLOCK
    from engine.speculative.loop import fit_lanes
    from engine.speculative.tree import DraftTree

    # root at 500; depth-1 nodes in columns 0..3 land at 501, 517, 533, 549
    tree = DraftTree(torch.tensor([10, 11, 12, 13, 14, 15]), [-1, -1, -1, -1, 0, 2], torch.zeros(6))
    fitted = fit_lanes(tree, KEY_BLOCK - 12, TreeLayout(LANE_STRIDE))
    assert fitted.token_list == [10, 14]  # 11, 12 and 13 cross 512; 15 hangs from 12
    assert fitted.parent_list == [-1, 0]
    assert (
        fit_lanes(tree, 40, TreeLayout(LANE_STRIDE)) is tree
        and fit_lanes(tree, KEY_BLOCK - 12, TreeLayout()) is tree
    )


def test_where_other_columns_are_not_exact_only_the_first_chain_is_verified():
    from engine.speculative.loop import fit_lanes
    from engine.speculative.tree import DraftTree

    # depth 1: 10, 11, 12 (columns 0, 1, 2); depth 2: 13 under 10, 14 under 11, 15 under 10;
    # depth 3: 16 under 13
    tree = DraftTree(torch.arange(10, 17), [-1, -1, -1, 0, 1, 0, 3], torch.zeros(7))
    chain = fit_lanes(tree, 40, TreeLayout(LANE_STRIDE, max_columns=1))
    assert chain.token_list == [10, 13, 16] and chain.parent_list == [-1, 0, 1]
    assert fit_lanes(tree, 40, TreeLayout(LANE_STRIDE, max_columns=None)) is tree
    assert fit_lanes(chain, 40, TreeLayout(LANE_STRIDE, max_columns=1)) is chain


def test_tree_room_bounds_the_slots_of_trees_fitted_to_fewer_columns():
    """A tree cut to ``max_columns`` lane columns (``fit_lanes``) stays inside
    ``tree_room(n, TreeLayout(stride, max_columns))``; a chain needs its nodes and two slots, not a
    lane per node (a batch of 8 once zeroed and copied caches 30x too big for its chains)."""
    from engine.speculative.loop import fit_lanes
    from engine.speculative.tree import DraftTree

    gen = torch.Generator().manual_seed(1)
    for trial in range(200):
        n = int(torch.randint(1, 40, (1,), generator=gen))
        parents = [int(torch.randint(-1, i, (1,), generator=gen)) for i in range(n)]
        columns = int(torch.randint(1, 5, (1,), generator=gen))
        fitted = fit_lanes(
            DraftTree(torch.arange(n), parents, torch.zeros(n)),
            40,
            TreeLayout(LANE_STRIDE, columns),
        )
        slots = tree_slots(fitted.depths_with_root(), fitted.parents, 40, LANE_STRIDE)
        assert (
            int(slots.max()) - 40
            < tree_room(n, TreeLayout(LANE_STRIDE, columns))
            <= tree_room(n, TreeLayout(LANE_STRIDE))
        )
    assert (
        tree_room(63, TreeLayout(LANE_STRIDE, 1)) == 65
        and tree_room(63, TreeLayout(LANE_STRIDE)) == LANE_STRIDE * 64
    )
    assert tree_room(63, TreeLayout(0, 1)) == tree_room(63, TreeLayout()) == 65


def _attention_summing(group: int | None):
    """An ``attend_rows`` stand-in in fp32 that sums a row's weighted values in slot order, one
    running sum (group None) or per block of ``group`` slots then across blocks."""

    def attend(rows, k, v, mask):
        scores = torch.einsum("thgd,hsd->thgs", rows.float(), k[0].float()) / rows.shape[-1] ** 0.5
        weights = scores.masked_fill(~mask[:, None, None, :], float("-inf")).softmax(-1)
        terms = weights[..., None] * v[0].float()[None, :, None]  # [T, H, G, S, D]
        if group is None:
            total = torch.zeros_like(terms[..., 0, :])
            for s in range(terms.shape[3]):
                total = total + terms[..., s, :]
        else:
            total = sum(
                terms[..., i : i + group, :].sum(3) for i in range(0, terms.shape[3], group)
            )
        return total.to(rows.dtype)

    return attend


def test_the_shifted_keys_probe_tells_a_grouping_sum_from_an_ordered_one(monkeypatch):
    import engine.runtime.exact_rows as exact_rows

    for group, expected in ((None, True), (16, False)):
        monkeypatch.setattr(exact_rows, "attend_rows", _attention_summing(group))
        exact_rows.shifted_keys_stay_exact.cache_clear()
        assert exact_rows.shifted_keys_stay_exact(torch.bfloat16, 1, 1, 8, trials=3) is expected
    exact_rows.shifted_keys_stay_exact.cache_clear()


def test_a_half_precision_model_verifies_other_columns_only_where_the_probe_allows():
    from engine.runtime.exact_rows import shifted_keys_stay_exact

    half = make_tiny_target().to(torch.bfloat16)
    half.dtype = torch.bfloat16
    make_rows_exact(half)
    cfg = half.config
    probe = shifted_keys_stay_exact(
        torch.bfloat16,
        cfg.num_key_value_heads,
        cfg.num_attention_heads // cfg.num_key_value_heads,
        cfg.head_dim,
    )
    assert half.layout.max_columns == (None if probe else 1)
