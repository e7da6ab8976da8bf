"""Batched speculative decoding: every row equals its own single-sequence decode."""

from __future__ import annotations

import pytest
import torch

from engine.decode.autoregressive import decode_autoregressive
from engine.decode.sampling import SamplingParams
from engine.decode.stats import DecodeStats
from engine.decode.stopping import StopChecker
from engine.speculative import batch as batch_module
from engine.speculative.batch import decode_speculative_batch
from engine.speculative.loop import FixedTree, TreeConfig, decode_speculative
from tests.tiny import make_tiny_drafter, make_tiny_target

CONFIGS = [
    TreeConfig.chain(3),
    TreeConfig(budget=8, max_depth=4, top_k=2),
    TreeConfig(budget=0, max_depth=1, top_k=1),
]


def prompts(count: int, seed: int = 0) -> list[list[int]]:
    gen = torch.Generator().manual_seed(seed)
    return [
        torch.randint(0, 128, (int(n),), generator=gen).tolist()
        for n in torch.randint(3, 30, (count,), generator=gen)
    ]


def run_batch(target, drafter, batch_prompts, params, eos=(), config=None):
    stops = [StopChecker(list(eos), p.max_new_tokens) for p in params]
    stats = [DecodeStats() for _ in batch_prompts]
    out = [[] for _ in batch_prompts]
    for index, tokens in decode_speculative_batch(
        target, drafter, batch_prompts, params, stops, stats, FixedTree(config)
    ):
        out[index].extend(tokens)
    return out, stats


@pytest.mark.parametrize("config", CONFIGS, ids=["chain3", "tree8", "none"])
@pytest.mark.parametrize("window", [None, 8])
def test_batched_greedy_equals_reference_for_ragged_rows(config, window, one_thread):
    target = make_tiny_target(seed=5)
    drafter = make_tiny_drafter(target, window=window)
    batch = prompts(4)
    params = [SamplingParams(max_new_tokens=n) for n in (40, 25, 33, 1)]
    out, stats = run_batch(target, drafter, batch, params, config=config)
    for prompt, p, got, s in zip(batch, params, out, stats):
        expected = list(decode_autoregressive(target, prompt, p, StopChecker([], p.max_new_tokens)))
        assert got == expected
        assert s.new_tokens == len(expected) and s.finish_reason == "length"
        single = DecodeStats()  # same drafts as alone: catches drafter-side mask/position slips
        list(
            decode_speculative(
                target,
                drafter,
                prompt,
                p,
                StopChecker([], p.max_new_tokens),
                single,
                FixedTree(config),
            )
        )
        assert s.accepted_lengths == single.accepted_lengths
    assert sum(s.target_forwards for s in stats) > 0


def test_batched_rows_stop_on_eos_and_repack(one_thread, monkeypatch):
    """Rows finishing at different times leave the batch; re-packing the cache holes (forced here
    every round) changes nothing."""
    import engine.speculative.batch as batch_module

    repacks = []
    original = batch_module.BatchLayout.ensure_room

    def always_repack(self, needed):
        before = self.repacks
        fullest = int(self.valid[:, : self.length].sum(1).max())
        original(
            self, max(needed, self.cache.capacity - fullest)
        )  # no room unless there are no holes
        repacks.append(self.repacks - before)

    monkeypatch.setattr(batch_module.BatchLayout, "ensure_room", always_repack)
    target = make_tiny_target(seed=7)
    drafter = make_tiny_drafter(target, window=16)
    batch = prompts(5, seed=3)
    params = [SamplingParams(max_new_tokens=60) for _ in batch]
    reference = [
        list(decode_autoregressive(target, p, params[0], StopChecker([], 60))) for p in batch
    ]
    eos = reference[2][10]  # some row stops early on this token
    out, stats = run_batch(
        target, drafter, batch, params, eos=[eos], config=TreeConfig(budget=6, max_depth=3, top_k=2)
    )
    for prompt, got, s in zip(batch, out, stats):
        expected = list(decode_autoregressive(target, prompt, params[0], StopChecker([eos], 60)))
        assert got == expected
    assert any(s.finish_reason == "eos" for s in stats) and any(
        s.finish_reason == "length" for s in stats
    )
    assert sum(repacks) >= 2


def test_repack_keeps_each_rows_entries_in_order():
    from engine.runtime.kv_cache import KVCache
    from engine.speculative.batch import BatchLayout

    layout = BatchLayout(KVCache(1, 2, 1, 1, 8, torch.float32), 2)
    layout.cache.k[0, :, 0, :, 0] = torch.arange(16.0).view(2, 8)
    layout.cache.commit(6)
    layout.valid[0, [1, 2, 5]] = True
    layout.valid[1, [0, 3]] = True
    layout.positions[0, [1, 2, 5]] = torch.tensor([0, 1, 2])
    layout.positions[1, [0, 3]] = torch.tensor([0, 1])
    layout.ensure_room(4)  # 6 + 4 > 8: re-pack to width 3
    assert layout.length == 3 and layout.repacks == 1
    assert layout.valid[:, :3].tolist() == [[True, True, True], [False, True, True]]
    assert layout.cache.k[0, 0, 0, :3, 0].tolist() == [1.0, 2.0, 5.0]
    assert layout.cache.k[0, 1, 0, 1:3, 0].tolist() == [8.0, 11.0]
    assert layout.positions[1, 1:3].tolist() == [0, 1]
    with pytest.raises(RuntimeError, match="cannot hold"):
        layout.ensure_room(6)


def test_batched_equals_single_sequence_speculative_under_sampling_seeds(one_thread):
    """Same seed, same tree: a row's sampled output equals the single-sequence speculative
    decoder's."""
    target = make_tiny_target(seed=9)
    drafter = make_tiny_drafter(target, window=16)
    batch = prompts(3, seed=4)
    params = [
        SamplingParams(temperature=0.8, top_p=0.9, max_new_tokens=30, seed=s) for s in (1, 2, 3)
    ]
    config = TreeConfig(budget=6, max_depth=3, top_k=2)
    out, _ = run_batch(target, drafter, batch, params, config=config)
    for prompt, p, got in zip(batch, params, out):
        single = [
            t
            for c in decode_speculative(
                target, drafter, prompt, p, StopChecker([], 30), None, FixedTree(config)
            )
            for t in c
        ]
        assert got == single


class EveryOtherRoundPlain(FixedTree):
    """Plain rounds between drafting rounds, in both decoders (batched: budget-0 rounds); keeps
    the tokens of every drafted tree, per sequence (``stats``: the decode's DecodeStats objects)."""

    def __init__(self, config: TreeConfig, stats: list[DecodeStats]) -> None:
        super().__init__(config)
        self.calls, self.stats = 0, stats
        self.drafts: list[list[list[int]]] = [[] for _ in stats]

    def batch_config(self, context: int, batch: int) -> TreeConfig:
        self.calls += 1
        return self.config if self.calls % 2 else TreeConfig.chain(0)

    def plain_steps(self, context: int) -> int:
        self.calls += 1
        return 0 if self.calls % 2 else 1

    def observe(self, tree, result, draft_s, verify_s, stats) -> None:
        self.observe_batch(self.config, [tree], [result], draft_s, verify_s, [stats])

    def observe_batch(self, config, trees, results, draft_s, verify_s, stats) -> None:
        for tree, row_stats in zip(trees, stats):
            if tree.size:
                row = next(i for i, s in enumerate(self.stats) if s is row_stats)
                self.drafts[row].append(tree.token_list)


@pytest.mark.parametrize("window", [None, 8])
def test_plain_rounds_defer_the_drafters_catch_up_without_changing_its_drafts(
    window, one_thread, monkeypatch
):
    """Tokens of plain rounds reach the drafter at the next drafting round, in one pass (a
    sliding-window drafter only the last window of them): every row drafts the same trees as
    alone, where the drafter is fed after every plain step."""
    dropped = []
    keep_last = batch_module._keep_last
    monkeypatch.setattr(
        batch_module,
        "_keep_last",
        lambda row, count: (
            dropped.append(max(0, len(row.pending_tokens) - count)),
            keep_last(row, count),
        ),
    )
    target = make_tiny_target(seed=5)
    drafter = make_tiny_drafter(target, window=window)
    batch = prompts(3, seed=2)
    params = [SamplingParams(max_new_tokens=n) for n in (30, 17, 24)]
    config = TreeConfig(budget=6, max_depth=3, top_k=2)
    stops = [StopChecker([], p.max_new_tokens) for p in params]
    stats = [DecodeStats() for _ in batch]
    planner = EveryOtherRoundPlain(config, stats)
    out = [[] for _ in batch]
    for index, tokens in decode_speculative_batch(
        target, drafter, batch, params, stops, stats, planner
    ):
        out[index].extend(tokens)
    for row, (prompt, p, got) in enumerate(zip(batch, params, out)):
        assert got == list(
            decode_autoregressive(target, prompt, p, StopChecker([], p.max_new_tokens))
        )
        single = EveryOtherRoundPlain(config, [DecodeStats()])
        list(
            decode_speculative(
                target,
                drafter,
                prompt,
                p,
                StopChecker([], p.max_new_tokens),
                single.stats[0],
                single,
            )
        )
        assert len(planner.drafts[row]) >= 4
        assert planner.drafts[row] == single.drafts[0]
    assert (sum(dropped) > 0) == (window is not None)  # the prompts outgrow a window of 8


def test_deep_narrow_trees_fit_the_drafter_cache(one_thread):
    target = make_tiny_target(seed=6)
    drafter = make_tiny_drafter(target, window=8)
    batch = [[1, 2, 3, 4, 5], [9, 8, 7]]
    params = [SamplingParams(max_new_tokens=10) for _ in batch]
    out, _ = run_batch(
        target, drafter, batch, params, config=TreeConfig(budget=2, max_depth=8, top_k=4)
    )
    for prompt, got in zip(batch, out):
        assert got == list(decode_autoregressive(target, prompt, params[0], StopChecker([], 10)))


def test_plain_batched_decoding_without_a_drafter(one_thread):
    target = make_tiny_target(seed=2)
    batch = prompts(3, seed=8)
    params = [SamplingParams(max_new_tokens=n) for n in (20, 7, 13)]
    out, stats = run_batch(
        target, None, batch, params, config=TreeConfig(budget=0, max_depth=1, top_k=1)
    )
    for prompt, p, got, s in zip(batch, params, out, stats):
        assert got == list(
            decode_autoregressive(target, prompt, p, StopChecker([], p.max_new_tokens))
        )
        assert s.target_forwards == p.max_new_tokens - 1 and s.tau == pytest.approx(
            p.max_new_tokens / (p.max_new_tokens - 1)
        )


def test_bad_batches_are_refused():
    target = make_tiny_target()
    drafter = make_tiny_drafter(target)
    with pytest.raises(ValueError, match="one or more prompts"):
        list(decode_speculative_batch(target, drafter, [], [], []))
    with pytest.raises(ValueError, match="without a drafter"):
        list(
            decode_speculative_batch(target, None, [[1]], [SamplingParams()], [StopChecker([], 4)])
        )
    with pytest.raises(ValueError, match="at least one token"):
        list(
            decode_speculative_batch(
                target, drafter, [[]], [SamplingParams()], [StopChecker([], 4)]
            )
        )
