"""The EAGLE-4 harness: cost tables, calibration, the cost-aware policy and lossless decoding with
it."""

from __future__ import annotations

import json

import pytest
import torch

from engine.decode.autoregressive import decode_autoregressive
from engine.decode.sampling import SamplingParams
from engine.decode.stats import DecodeStats
from engine.decode.stopping import StopChecker
from engine.planning.acceptance import AcceptanceCalibrator
from engine.planning.calibrate import calibrate, cost_key
from engine.planning.cost_table import (
    CostKey,
    CostTable,
    CostTableError,
    CostTableMismatch,
    table_path,
)
from engine.planning.harness import Harness, HarnessConfig, decode_harness, load_or_calibrate
from engine.planning.policy import best_verify_count, choose_width
from engine.runtime.layout import TreeLayout
from engine.speculative.loop import DraftState, drafter_catch_up
from engine.speculative.planner import TreeConfig
from tests.tiny import make_tiny_drafter, make_tiny_target

KEY = CostKey(device="cpu:test", model="abc", dtype="float32", threads=1)


def synthetic_table(verify_per_token: float, base: float = 0.1, draft: float = 0.002) -> CostTable:
    """Verification = base + per-token cost (flat in context and batch); drafting a flat
    ``draft``."""
    tokens, contexts, batches, widths = [1, 64], [128, 4096], [1, 8], [1, 64]
    verify = [[[base + verify_per_token * n for n in tokens] for _ in contexts] for _ in batches]
    return CostTable(
        key=KEY,
        tokens=tokens,
        contexts=contexts,
        batches=batches,
        verify=verify,
        widths=widths,
        draft=[[draft, draft] for _ in batches],
    )


# ---- cost tables --------------------------------------------------------------------------------
def test_cost_table_interpolates_and_extrapolates():
    table = synthetic_table(0.01)
    assert table.verify_seconds(1, 128) == pytest.approx(0.11)
    assert table.verify_seconds(33, 1000) == pytest.approx(0.1 + 0.33)
    assert table.verify_seconds(80, 128) == pytest.approx(0.1 + 0.8)  # beyond the grid: linear
    assert table.draft_seconds(0) == 0.0 and table.draft_seconds(7) == pytest.approx(0.002)
    noisy = CostTable(
        key=KEY,
        tokens=[1, 8],
        contexts=[128],
        batches=[1],
        verify=[[[0.2, 0.1]]],
        widths=[1],
        draft=[[0.01]],
    )
    assert noisy.verify_seconds(64, 128) == pytest.approx(0.1)  # never extrapolated below the edge
    assert noisy.verify_seconds(1, 16) == pytest.approx(0.2)  # below the grid: the first value
    with pytest.raises(CostTableError, match="finite"):
        CostTable(
            key=KEY,
            tokens=[1],
            contexts=[1],
            batches=[1],
            verify=[[[float("nan")]]],
            widths=[1],
            draft=[[0.1]],
        )


def test_cost_table_round_trip_and_key_mismatch(tmp_path):
    table = synthetic_table(0.01)
    path = table.save(table_path(KEY, tmp_path))
    assert path.name.endswith(".json") and "abc" in path.name
    loaded = CostTable.load(path, expect=KEY)
    assert loaded.verify == table.verify and loaded.key == KEY
    other = CostKey(device="cpu:test", model="abc", dtype="bfloat16", threads=1)
    with pytest.raises(CostTableMismatch, match="bfloat16"):
        CostTable.load(path, expect=other)


def test_cost_table_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(CostTableError, match="cannot read"):
        CostTable.load(bad)
    raw = synthetic_table(0.01).to_json()
    raw["verify"] = raw["verify"][:1]
    bad.write_text(json.dumps(raw))
    with pytest.raises(CostTableError, match="shape"):
        CostTable.load(bad)
    raw = synthetic_table(0.01).to_json()
    raw["tokens"] = [64, 1]
    bad.write_text(json.dumps(raw))
    with pytest.raises(CostTableError, match="increasing"):
        CostTable.load(bad)


# ---- calibration --------------------------------------------------------------------------------
def test_a_calibration_point_keeps_its_fastest_repeat(monkeypatch):
    """Another job only ever adds time: one slow repeat (here 2 s of 3) must not enter the table."""
    import engine.planning.calibrate as calibrate_module

    clock = iter([0.0, 2.0, 10.0, 10.05, 20.0, 20.06])  # start/stop of three timed calls
    monkeypatch.setattr(calibrate_module.time, "perf_counter", lambda: next(clock))
    calls = []
    assert calibrate_module.fastest_seconds(lambda: calls.append(1), repeats=3) == pytest.approx(
        0.05
    )
    assert len(calls) == 4  # one warm-up, three timed


def test_calibrate_measures_a_table_that_load_or_calibrate_reuses(
    tmp_path, one_thread, monkeypatch
):
    target = make_tiny_target()
    drafter = make_tiny_drafter(target, window=16)
    table = calibrate(
        target,
        drafter,
        tokens=(1, 8),
        contexts=(16, 64),
        batches=(1, 2),
        widths=(1, 4),
        repeats=1,
        progress=False,
    )
    assert table.key == cost_key(target, drafter)
    assert all(s > 0 for b in table.verify for c in b for s in c) and all(
        s > 0 for b in table.draft for s in b
    )
    first = load_or_calibrate(target, drafter, tmp_path)  # nothing stored: quick calibration
    assert first.quick and table_path(first.key, tmp_path).exists()
    import engine.planning.calibrate as calibrate_module

    monkeypatch.setattr(
        calibrate_module, "quick_calibrate", lambda *a, **k: pytest.fail("measured again")
    )
    assert load_or_calibrate(target, drafter, tmp_path).verify == first.verify


# ---- policy -------------------------------------------------------------------------------------
def test_best_verify_count_trades_acceptance_for_cost():
    values = [0.9, 0.8, 0.7, 0.1, 0.01]
    cheap = best_verify_count(values, 0.0, lambda n: 0.1 + 1e-4 * n, 63)
    assert cheap.count == 5
    dear = best_verify_count(values, 0.0, lambda n: 0.1 * n, 63)
    assert dear.count == 0 and dear.rate == pytest.approx(1 / 0.1)
    medium = best_verify_count(values, 0.0, lambda n: 0.1 + 0.02 * n, 63)
    assert 1 <= medium.count < 5


def test_choose_width_stops_when_expansion_does_not_pay():
    pool = [0.9, 0.3, 0.1]
    width, plan = choose_width(pool, pool, 0.8, 0.002, lambda n: 0.1 + 1e-4 * n, lambda w: 1e-4, 63)
    assert width == 3 and plan.count == 6
    width, plan = choose_width(pool, pool, 0.8, 0.002, lambda n: 0.1 * n, lambda w: 1e-4, 63)
    assert width == 0


class ConfidentDrafter:
    """Wraps a tiny drafter so that top-k returns fixed confidences (synthetic, for the policy
    only)."""

    def __init__(self, drafter, confidences):
        self.inner, self.confidences = drafter, torch.tensor(confidences)

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def __call__(self, *args, **kwargs):
        return self.inner(*args, **kwargs)

    def topk(self, out, k):
        lead = out.shape[:-1]
        logp = self.confidences[:k].log().expand(*lead, k).clone()
        ids = torch.arange(k).expand(*lead, k).clone()
        return logp, ids


def grow(table, confidences, config=None):
    target = make_tiny_target()
    drafter = make_tiny_drafter(target, window=16)
    state = DraftState(drafter.new_cache(512), root_out=None)
    taps = torch.randn(1, 5, 3 * target.config.hidden_size)
    drafter_catch_up(drafter, state, taps, [1, 2, 3, 4, 5])
    harness = Harness(table, config or HarnessConfig(branching=4))
    with torch.inference_mode():
        return harness.draft(ConfidentDrafter(drafter, confidences), state, context=100)


def test_policy_grows_deep_and_wide_when_verification_is_nearly_free(one_thread):
    tree = grow(synthetic_table(1e-5, draft=1e-5), [0.9, 0.6, 0.3, 0.1])
    assert tree.max_depth >= 6 and len(tree.root_children) >= 2 and tree.size > 20


def test_policy_picks_a_chain_or_nothing_when_verification_is_expensive(one_thread):
    sure = grow(synthetic_table(0.02, draft=1e-4), [0.95, 0.02, 0.01, 0.01])
    assert sure.size >= 2 and all(
        len(c) <= 1 for c in [sure.root_children, *sure.children]
    )  # a chain
    unsure = grow(synthetic_table(0.5, draft=0.01), [0.3, 0.2, 0.1, 0.1])
    assert unsure.size == 0  # plain step


def test_the_drafters_own_seconds_correct_the_expansion_cost_not_the_rounds_fixed_costs(one_thread):
    """A round's drafting time includes the policy's arithmetic and the root's top-k, paid whether
    it expands or not: only the expansions' own seconds may scale what one more expansion costs."""
    from types import SimpleNamespace

    target = make_tiny_target()
    drafter = make_tiny_drafter(target, window=16)
    state = DraftState(drafter.new_cache(512), root_out=None)
    drafter_catch_up(
        drafter, state, torch.randn(1, 5, 3 * target.config.hidden_size), [1, 2, 3, 4, 5]
    )
    harness = Harness(
        synthetic_table(1e-5, draft=1e-5), HarnessConfig(branching=4, latency_smoothing=1.0)
    )
    with torch.inference_mode():
        tree = harness.draft(ConfidentDrafter(drafter, [0.9, 0.6, 0.3, 0.1]), state, context=100)
    pending = dict(harness._pending)
    assert pending["widths"] and 0 < pending["drafted_s"]
    harness.observe(
        tree, SimpleNamespace(accepted_nodes=[], num_accepted=0), 10.0, 1e-3, DecodeStats()
    )
    # a whole second of "drafting" per round would make the scale ~1e5; the expansions' own time
    # does not
    assert harness.draft_scale == pytest.approx(pending["drafted_s"] / pending["predicted_tree_s"])


def test_calibrator_learns_from_observations():
    cal = AcceptanceCalibrator(bins=10, prior_weight=2.0)
    assert float(cal.calibrate(torch.tensor([0.85]))) == pytest.approx(0.85)
    cal.observe([0.85] * 50, [False] * 45 + [True] * 5)
    assert float(cal.calibrate(torch.tensor([0.85]))) < 0.2
    assert cal.snapshot() == [
        {"confidence": [0.8, 0.9], "rate": pytest.approx((1.7 + 5) / 52, abs=1e-4), "tests": 50}
    ]


# ---- decoding -----------------------------------------------------------------------------------
@pytest.mark.parametrize("verify_per_token", [1e-6, 0.01, 1.0])
def test_harness_greedy_equals_reference(verify_per_token, one_thread):
    target = make_tiny_target(seed=3)
    drafter = make_tiny_drafter(target, window=16)
    harness = Harness(
        synthetic_table(verify_per_token, draft=1e-7),
        HarnessConfig(min_value=0.0, latency_smoothing=0.0),
    )
    for seed in range(3):
        prompt = torch.randint(
            0, 128, (12,), generator=torch.Generator().manual_seed(seed)
        ).tolist()
        params = SamplingParams(max_new_tokens=40)
        expected = list(decode_autoregressive(target, prompt, params, StopChecker([], 40)))
        stats = DecodeStats()
        chunks = list(
            decode_harness(target, drafter, prompt, params, StopChecker([], 40), stats, harness)
        )
        assert [t for c in chunks for t in c] == expected
        assert len(stats.rounds) == stats.target_forwards
        assert {
            "nodes",
            "depth",
            "predicted_accepted",
            "accepted",
            "predicted_s",
            "seconds",
        } <= set(stats.rounds[0])
    sizes = [r["nodes"] for r in stats.rounds]
    if verify_per_token < 1e-3:
        assert max(sizes) > 16  # big trees were verified, exactly
    if verify_per_token == 1.0:
        assert max(sizes) == 0  # speculation predicted slower: plain steps


def test_on_a_model_that_verifies_one_column_the_harness_drafts_chains(tmp_path, one_thread):
    """Where only a tree's first column is exact (engine.runtime.exact_rows), nodes beside it would
    be drafted only to be dropped: the harness drafts one child per node, and stays lossless."""
    target = make_tiny_target(seed=3)
    drafter = make_tiny_drafter(target, window=16)
    target.layout = TreeLayout(max_columns=1)
    harness = Harness.for_model(target, drafter, tmp_path)
    assert harness.config.branching == 1
    harness._costs = synthetic_table(1e-6, draft=1e-7)  # cheap verification: it would grow wide
    prompt = torch.randint(0, 128, (12,), generator=torch.Generator().manual_seed(0)).tolist()
    params, stats = SamplingParams(max_new_tokens=40), DecodeStats()
    chunks = list(
        decode_harness(target, drafter, prompt, params, StopChecker([], 40), stats, harness)
    )
    plain = list(decode_autoregressive(target, prompt, params, StopChecker([], 40)))
    assert [t for c in chunks for t in c] == plain
    assert max(r["nodes"] for r in stats.rounds) > 1
    assert all(r["nodes"] == r["depth"] for r in stats.rounds)  # chains: one node per level
    target.layout = TreeLayout()
    assert (
        Harness.for_model(target, drafter, tmp_path).config.branching == HarnessConfig().branching
    )


def test_harness_switches_to_plain_steps_when_rounds_are_measured_slower():
    harness = Harness(synthetic_table(0.001), HarnessConfig(plain_run=7, measure_rounds=1))
    assert harness.plain_steps(256) == 0  # nothing measured yet: speculate
    harness.observe_pace(2, 0.2, plain=False)  # 0.1 s per token speculating
    assert harness.plain_steps(256) == 0  # the table's plain step: 0.101 s
    harness.observe_pace(1, 0.05, plain=True)  # measured: 0.05 s per plain token
    assert harness.plain_steps(256) == 0  # after a plain run: one round to re-measure
    harness.observe_pace(2, 0.2, plain=False)  # ...which loses: a run twice as long
    assert harness.plain_steps(256) == 14
    harness.observe_pace(3, 0.15, plain=True)  # a decode ended 3 steps into it:
    assert harness.plain_steps(256) == 11  # the next decode goes on with the rest
    harness.observe_pace(11, 0.55, plain=True)
    assert harness.plain_steps(256) == 0  # used up: re-measure
    for _ in range(20):
        harness.observe_pace(4, 0.1, plain=False)  # drafts got good: 0.025 s per token
    assert harness.plain_steps(256) == 0


def test_plain_runs_double_while_re_measured_rounds_keep_losing():
    harness = Harness(
        synthetic_table(0.001), HarnessConfig(plain_run=8, max_plain_run=40, measure_rounds=1)
    )
    harness.observe_pace(2, 0.2, plain=False)  # 0.1 s per token speculating
    harness.observe_pace(1, 0.05, plain=True)  # 0.05 s per plain token
    runs = []
    for _ in range(5):
        assert harness.plain_steps(256) == 0  # the run is used up: one round re-measures...
        harness.observe_pace(2, 0.2, plain=False)  # ...and loses again
        runs.append(harness.plain_steps(256))
        harness.observe_pace(runs[-1], 0.05 * runs[-1], plain=True)
    assert runs == [16, 32, 40, 40, 40]
    for _ in range(10):
        harness.observe_pace(8, 0.1, plain=False)  # rounds that win reset the run
    assert harness.plain_steps(256) == 0
    for _ in range(10):
        harness.observe_pace(1, 0.5, plain=False)  # losing again, outside a re-measure
    assert harness.plain_steps(256) == 8


def test_speculation_is_judged_on_several_rounds_by_their_mean_tokens():
    """One round that drafts in vain (1 token) must not send the harness to plain steps: it
    measures ``measure_rounds`` rounds, and per token it divides mean seconds by mean tokens (a
    plain mean over the first rounds, then a running one that moves by ``round_smoothing``)."""
    harness = Harness(
        synthetic_table(0.001), HarnessConfig(plain_run=8, measure_rounds=3, pace_smoothing=0.5)
    )
    harness.observe_pace(10, 0.15, plain=True)  # plain: 0.015 s per token
    harness.observe_pace(1, 0.02, plain=False)  # a round that drafted in vain: 0.02 s/token
    assert harness.plain_steps(256) == 0  # ...but two more rounds are measured first
    harness.observe_pace(3, 0.03, plain=False)
    harness.observe_pace(3, 0.03, plain=False)
    # mean seconds 0.08 / 3 over mean tokens 7 / 3: 0.0114 s per token (the mean of per-round paces
    # is 0.0133)
    assert abs(harness.pace["speculative"] - 0.08 / 7) < 1e-9
    assert harness.plain_steps(256) == 0  # faster than plain: speculate on
    for _ in range(6):
        harness.observe_pace(1, 0.04, plain=False)  # drafts stopped paying
    assert harness.plain_steps(256) == 8  # a plain run...
    assert abs(harness.pace["speculative"] - (0.08 + 6 * 0.04) / (7 + 6)) < 1e-9
    harness.observe_pace(8, 0.12, plain=True)
    assert [harness.plain_steps(256) for _ in range(3)] == [
        0,
        0,
        0,
    ]  # ...then three rounds re-measure


def test_a_streak_of_missed_rounds_does_not_outweigh_many_rounds_that_paid():
    """Rounds emit 1 or 2 tokens by luck: after 40 rounds that paid, three misses in a row leave
    speculation ahead of plain steps (a 3-round window had sent it to plain runs)."""
    harness = Harness(synthetic_table(0.001), HarnessConfig(plain_run=8, measure_rounds=3))
    harness.observe_pace(24, 24 * 0.0135, plain=True)  # plain: 13.5 ms a token
    for i in range(40):
        harness.observe_pace(
            1 + i % 2, 0.0175, plain=False
        )  # 1.5 tokens per 17.5 ms round: 11.7 ms
    for _ in range(3):
        harness.observe_pace(1, 0.0175, plain=False)
    assert harness.pace["speculative"] < 0.0135 and harness.plain_steps(256) == 0


def test_rounds_that_re_measure_after_a_plain_run_weigh_enough_to_end_it():
    """After many rounds that lost, the few rounds that re-measure after a plain run must be able
    to show that speculation now pays (a 5% weight each would keep the old verdict)."""
    harness = Harness(synthetic_table(0.001), HarnessConfig(plain_run=8, measure_rounds=4))
    harness.pace["plain"] = 0.010  # plain: 10 ms a token
    for _ in range(100):
        harness.observe_pace(1, 0.015, plain=False)  # speculation: 15 ms a token
    assert harness.plain_steps(256) == 8
    harness.observe_pace(8, 8 * 0.010, plain=True)  # the run is used up
    assert harness.plain_steps(256) == 0  # re-measuring...
    for _ in range(4):
        harness.observe_pace(3, 0.015, plain=False)  # ...now 5 ms a token
    assert harness.plain_steps(256) == 0 and harness.pace["speculative"] < 0.010


def test_plain_runs_inside_a_harness_decode_stay_lossless(one_thread):
    target = make_tiny_target(seed=3)
    drafter = make_tiny_drafter(target, window=16)
    harness = Harness(
        synthetic_table(1e-6, draft=1e-7),
        HarnessConfig(min_value=0.0, plain_run=5, measure_rounds=0),
    )
    harness.observe_pace = lambda tokens, seconds, plain: (
        None
    )  # keep the forced pace, no re-measuring
    harness.pace = {"speculative": 1.0, "plain": 1e-3}  # speculation measured 1000x slower
    prompt = torch.randint(0, 128, (12,), generator=torch.Generator().manual_seed(5)).tolist()
    for params in (
        SamplingParams(max_new_tokens=40),
        SamplingParams(max_new_tokens=40, temperature=0.9, seed=2),
    ):
        expected = list(decode_autoregressive(target, prompt, params, StopChecker([], 40)))
        stats = DecodeStats()
        chunks = list(
            decode_harness(target, drafter, prompt, params, StopChecker([], 40), stats, harness)
        )
        assert [
            t for c in chunks for t in c
        ] == expected  # plain steps compute exactly the reference
        assert len(stats.rounds) == stats.target_forwards == 40 - 1
        assert all(r.get("plain") for r in stats.rounds)
    harness.pace = {"speculative": 1e-3, "plain": 1.0}
    stats = DecodeStats()
    chunks = list(
        decode_harness(
            target,
            drafter,
            prompt,
            SamplingParams(max_new_tokens=40),
            StopChecker([], 40),
            stats,
            harness,
        )
    )
    assert [t for c in chunks for t in c] == list(
        decode_autoregressive(
            target, prompt, SamplingParams(max_new_tokens=40), StopChecker([], 40)
        )
    )
    assert not any(r.get("plain") for r in stats.rounds)


def test_batched_rounds_follow_measured_round_times():
    """The table says verification is nearly free, but every drafting round is measured 20x a
    plain one: the harness tries each chain length once, then decodes plainly, exploring ever
    more rarely."""
    from types import SimpleNamespace

    harness = Harness(synthetic_table(1e-6, draft=1e-7), HarnessConfig(explore_every=4))
    chosen = []
    for _ in range(80):
        length = harness.batch_config(100, 8).budget
        chosen.append(length)
        trees = [SimpleNamespace(size=length, max_depth=length)] * 8
        results = [SimpleNamespace(num_accepted=min(length, 1))] * 8
        harness.observe_batch(
            TreeConfig.chain(length),
            trees,
            results,
            0.0,
            1.0 if length else 0.05,
            [DecodeStats() for _ in range(8)],
        )
    assert chosen[0] == 8 and set(chosen[:12]) >= {
        8,
        1,
    }  # the table's choice, measured, then others
    assert chosen[-40:].count(0) >= 38  # plain, explorations doubled apart
    # another batch size, not measured yet: the table's guess corrected by how far it missed at
    # 8 rows
    assert harness.batch_config(100, 7).budget == 0
    fresh = Harness(synthetic_table(1e-6, draft=1e-7), HarnessConfig(explore_every=4))
    assert fresh.batch_config(100, 7).budget == 8  # uncorrected, the table's choice


def test_batched_harness_picks_chain_lengths_and_stays_lossless(one_thread):
    from engine.speculative.batch import decode_speculative_batch

    target = make_tiny_target(seed=4)
    drafter = make_tiny_drafter(target, window=16)
    cheap = Harness(synthetic_table(1e-6, draft=1e-7))
    cheap.chain_accept = 0.9
    assert cheap.batch_config(100, 8).budget == 8  # verification nearly free: longest chain
    dear = Harness(synthetic_table(1.0, draft=0.01), HarnessConfig(explore_every=4))
    chosen = [dear.batch_config(100, 8).budget for _ in range(8)]
    assert chosen == [0, 0, 0, 1, 0, 0, 0, 1]  # plain, with an exploring chain
    small = Harness(synthetic_table(1e-6, draft=1e-7), HarnessConfig(max_nodes=2))
    small.chain_accept = 0.9
    assert small.batch_config(100, 8).budget == 2  # never beyond max_nodes
    assert small.batch_limit() == TreeConfig.chain(2) and cheap.batch_limit() == TreeConfig.chain(
        8
    )  # caches' size
    harness = Harness(synthetic_table(1e-3, draft=1e-4), HarnessConfig(latency_smoothing=0.0))
    batch = [
        torch.randint(0, 128, (n,), generator=torch.Generator().manual_seed(n)).tolist()
        for n in (5, 17, 9, 30)
    ]
    params = [SamplingParams(max_new_tokens=n) for n in (30, 12, 25, 20)]
    stops = [StopChecker([], p.max_new_tokens) for p in params]
    stats = [DecodeStats() for _ in batch]
    out = [[] for _ in batch]
    for index, tokens in decode_speculative_batch(
        target, drafter, batch, params, stops, stats, harness
    ):
        out[index].extend(tokens)
    for prompt, p, got, s in zip(batch, params, out, stats):
        assert got == list(
            decode_autoregressive(target, prompt, p, StopChecker([], p.max_new_tokens))
        )
        assert len(s.rounds) == s.target_forwards and s.rounds[0]["batch"] == 4


def test_harness_sampling_keeps_the_target_distribution(one_thread):
    """Trees sized by the harness (big ones: verification priced as free), sampled verification:
    the first two tokens follow the target's distribution (chi-square)."""
    from engine.decode.sampling import next_token_distribution
    from tests.engine.test_speculative import chi_square_p_value

    target = make_tiny_target(seed=11)
    drafter = make_tiny_drafter(target, window=16)
    harness = Harness(
        synthetic_table(1e-6, draft=1e-7), HarnessConfig(min_value=0.0, latency_smoothing=0.0)
    )
    prompt = [5, 17, 42, 8, 99, 3]
    params = [
        SamplingParams(temperature=1.0, top_p=0.95, max_new_tokens=2, seed=s) for s in range(1500)
    ]
    pairs = {}
    sizes = []
    for p in params:
        stats = DecodeStats()
        tokens = [
            t
            for c in decode_harness(target, drafter, prompt, p, StopChecker([], 2), stats, harness)
            for t in c
        ]
        pairs[tuple(tokens)] = pairs.get(tuple(tokens), 0) + 1
        sizes += [r["nodes"] for r in stats.rounds]
    assert max(sizes) > 8
    with torch.inference_mode():
        logits = target(torch.tensor([prompt]), target.new_cache(16)).logits[0, -1]
    p1 = next_token_distribution(logits, [], params[0])
    firsts = {}
    for (x1, _), count in pairs.items():
        firsts[x1] = firsts.get(x1, 0) + count
    assert (
        chi_square_p_value(firsts, {i: float(v) for i, v in enumerate(p1) if v > 0}, len(params))
        > 1e-3
    )
    top = max(firsts, key=firsts.get)
    with torch.inference_mode():
        logits2 = target(torch.tensor([prompt + [top]]), target.new_cache(16)).logits[0, -1]
    p2 = next_token_distribution(logits2, [top], params[0])
    seconds = {x2: c for (x1, x2), c in pairs.items() if x1 == top}
    assert (
        chi_square_p_value(seconds, {i: float(v) for i, v in enumerate(p2) if v > 0}, firsts[top])
        > 1e-3
    )


def test_the_cost_table_is_loaded_at_the_first_decode_not_when_the_harness_is_built(tmp_path):
    loads = []

    def table():
        loads.append(1)
        return synthetic_table(0.001)

    harness = Harness(table)
    assert loads == []
    assert harness.verify_seconds(4, 256) > 0 and harness.verify_seconds(8, 256) > 0
    assert loads == [1]


# ---- seeded sampling ----------------------------------------------------------------------------
def test_sampling_gets_the_fixed_tree_where_the_table_says_it_pays_and_plain_decoding_elsewhere():
    from engine.speculative.loop import FixedTree

    cheap_rows = Harness(synthetic_table(0.0005))  # a 17-token pass costs ~the same as one token
    planner = cheap_rows.for_sampling()
    assert isinstance(planner, FixedTree) and not planner.adaptive
    dear_rows = Harness(synthetic_table(0.05))  # each token costs half a single-token pass
    assert dear_rows.for_sampling() is None
    assert FixedTree().for_sampling() is not None


def test_a_generator_decodes_sampled_requests_plainly_when_its_harness_says_so(one_thread):
    from engine.decode.sampling import SamplingParams
    from engine.generator import Generator
    from engine.speculative.loop import FixedTree

    target = make_tiny_target()
    generator = Generator(
        target,
        tokenizer=None,
        drafter=make_tiny_drafter(target),
        planner=Harness(synthetic_table(0.05)),
    )
    assert generator.planner_for(SamplingParams(temperature=0.8, seed=1)) is None
    assert isinstance(
        generator.planner_for(SamplingParams()), Harness
    )  # greedy: the harness itself
    generator.planner = Harness(synthetic_table(0.0005))
    assert isinstance(generator.planner_for(SamplingParams(temperature=0.8, seed=1)), FixedTree)
