"""Copy drafts: lookups on small cases, grafting, pricing, and lossless decoding with them.

Lookups and pricing are plain numbers; decoding is checked on the tiny random target (every
path, greedy and sampled, fast) and on the real embedded model (greedy, 10 prompts x 128
tokens, fp32 and, where this CPU computes int4 rows independently, int4).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
import torch

from engine.decode.autoregressive import decode_autoregressive
from engine.decode.sampling import SamplingParams, next_token_distribution
from engine.decode.stats import DecodeStats
from engine.decode.stopping import StopChecker
from engine.planning.copy_planner import CopyPlanner
from engine.planning.cost_table import CostTable
from engine.planning.harness import Harness, HarnessConfig
from engine.planning.policy import best_copy_length
from engine.speculative.checkpoint import target_fingerprint
from engine.speculative.copy_draft import (
    COPY_TABLE,
    CopyDrafter,
    CopyTableError,
    NgramTable,
    RequestIndex,
)
from engine.speculative.loop import decode_speculative
from engine.speculative.tree import DraftTree, graft_chain
from tests.engine.test_harness import synthetic_table
from tests.engine.test_speculative import chi_square_p_value
from tests.tiny import make_tiny_drafter, make_tiny_target


# ---- lookups ------------------------------------------------------------------------------------
def test_the_table_keeps_frequent_contexts_and_their_best_next_token():
    table = NgramTable.build(
        [[1, 2, 3], [1, 2, 3], [1, 2, 4], [7, 8]], order=2, min_count=3, min_share=0.5
    )
    assert table.entries[(1,)] == (2, 3 / 4)  # 3 of 3, one unseen continuation
    assert table.entries[(1, 2)] == (3, 2 / 4)  # 3 twice, 4 once
    assert table.entries[(2,)] == (3, 2 / 4)
    assert (7,) not in table.entries  # seen once only
    assert table.next_token([9, 1, 2]) == (3, 0.5)  # the longest stored context wins
    assert table.next_token([5, 2]) == (3, 0.5)  # (5, 2) unknown: (2,) answers
    assert table.next_token([9]) is None
    rare = NgramTable.build([[1, 2], [1, 3], [1, 4]], order=1, min_count=3, min_share=0.5)
    assert (1,) not in rare.entries  # no continuation has half of them


def test_a_table_comes_back_from_its_file_and_refuses_another_target_or_a_cut_file(tmp_path):
    table = NgramTable.build([[5, 6, 7, 8]] * 4, order=3, min_count=2, fingerprint="abc")
    path = tmp_path / "copy.bin.gz"
    table.save(path)
    again = NgramTable.load(path, expect_fingerprint="abc")
    assert again.entries == table.entries and again.order == 3 and again.fingerprint == "abc"
    with pytest.raises(CopyTableError, match="made for target abc"):
        NgramTable.load(path, expect_fingerprint="xyz")
    data = gzip.decompress(path.read_bytes())
    (tmp_path / "cut.bin.gz").write_bytes(gzip.compress(data[:-4]))
    with pytest.raises(CopyTableError, match="cut short"):
        NgramTable.load(tmp_path / "cut.bin.gz")
    (tmp_path / "junk.bin.gz").write_bytes(b"not gzip")
    with pytest.raises(CopyTableError):
        NgramTable.load(tmp_path / "junk.bin.gz")


def test_the_request_index_follows_the_latest_and_longest_earlier_occurrence():
    index = RequestIndex([1, 2, 3, 9, 1, 2, 4, 5, 2, 4, 6])
    assert index.next_token([1, 2]) == 4  # (1, 2) last followed by 4
    assert index.next_token([9, 2, 4]) == 6  # (9, 2, 4) unseen: (2, 4) -> 6
    assert index.next_token([1, 2, 4]) == 5  # (1, 2, 4) -> 5, not (2, 4) -> 6
    assert index.next_token([7, 7]) is None
    assert index.next_token([4]) is None  # single tokens are not looked up
    index.extend([1, 2])
    assert index.next_token([1, 2]) == 4


def test_a_session_chains_request_copies_and_table_guesses_with_falling_values():
    table = NgramTable({(30,): (31, 0.8), (31,): (32, 0.5)}, order=1)
    session = CopyDrafter(table, max_length=6, local_share=0.4).start([10, 11, 12, 13, 20, 10, 11])
    chain, values = session.propose()
    # (10, 11) -> 12 from the request, then (11, 12) -> 13, (12, 13) -> 20, (13, 20) -> 10, ...
    assert chain[:4] == [12, 13, 20, 10]
    assert values[:3] == pytest.approx([0.4, 0.16, 0.064])
    assert all(a >= b for a, b in zip(values, values[1:]))
    session = CopyDrafter(table, max_length=4).start([1, 30])
    assert session.propose() == ([31, 32], pytest.approx([0.8, 0.4]))
    session.commit([31, 32, 99])
    assert session.propose() == ([], [])
    assert CopyDrafter(None).start([1, 2, 1, 2]).propose() == (
        [1, 2, 1, 2, 1, 2, 1, 2],
        pytest.approx([0.5**k for k in range(1, 9)]),
    )
    with pytest.raises(ValueError):
        CopyDrafter(table, max_length=0)


def test_a_grafted_chain_follows_matching_nodes_and_keeps_siblings_distinct():
    tree = DraftTree(
        torch.tensor([5, 6, 7]), torch.tensor([-1, -1, 0]), torch.tensor([-0.1, -0.5, -0.3])
    )
    grafted = graft_chain(tree, [5, 7, 8, 9])
    assert grafted.token_list == [5, 6, 7, 8, 9] and grafted.parent_list == [-1, -1, 0, 2, 3]
    assert graft_chain(tree, [5, 7]) is tree  # already there
    branch = graft_chain(tree, [6, 1])
    assert branch.token_list == [5, 6, 7, 1] and branch.parent_list == [-1, -1, 0, 1]
    root_side = graft_chain(tree, [4])
    assert root_side.root_children[-1] == 3  # drafted children keep their order first
    assert graft_chain(DraftTree.empty(), [3, 4]).parent_list == [-1, 0]


def test_a_copy_chain_is_verified_only_as_far_as_it_is_predicted_to_pay():
    cheap = lambda n: 1.0 + 0.05 * (n - 1)  # noqa: E731
    dear = lambda n: 1.0 + 0.8 * (n - 1)  # noqa: E731
    assert best_copy_length([0.9, 0.8, 0.7], 1.0, cheap) == 3
    assert (
        best_copy_length([0.9, 0.8, 0.7], 1.0, dear) == 1
    )  # 1.9 / 1.8 beats 1, 2.7 / 2.6 does not
    assert (
        best_copy_length([0.9, 0.8, 0.7], 0.5, dear) == 0
    )  # corrected down, even one does not pay
    assert best_copy_length([0.05, 0.01], 1.0, dear) == 0
    assert best_copy_length([0.9, 0.05], 1.0, lambda n: 1.0 + 0.2 * (n - 1)) == 1
    assert best_copy_length([], 1.0, cheap) == 0


# ---- decoding on the tiny target ----------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_costs() -> CostTable:
    """Verification costs 0.1 s plus 0.005 s a token: copy chains of likely tokens pay."""
    return synthetic_table(0.005)


def _tiny_table(model, prompt, params, length=40):
    """An n-gram table from the target's own greedy continuation of ``prompt``: good copy drafts."""
    out = list(decode_autoregressive(model, prompt, params, StopChecker((), length)))
    return NgramTable.build([out, out, out], order=2, min_count=2)


@pytest.fixture(scope="module")
def tiny():
    model = make_tiny_target()
    return model, make_tiny_drafter(model)


def _decode(model, drafter, prompt, params, planner):
    stats = DecodeStats()
    out = [
        t
        for chunk in decode_speculative(
            model, drafter, prompt, params, StopChecker((), params.max_new_tokens), stats, planner
        )
        for t in chunk
    ]
    return out, stats


def _copy_rounds(stats) -> int:
    return sum(1 for r in stats.rounds if r.get("copy"))


def test_greedy_decoding_with_copy_drafts_equals_plain_decoding_on_the_tiny_target(
    tiny, tiny_costs, one_thread
):
    model, drafter = tiny
    params = SamplingParams(max_new_tokens=40)
    for seed in range(4):
        prompt = torch.randint(
            0, 128, (12,), generator=torch.Generator().manual_seed(seed)
        ).tolist()
        plain = list(decode_autoregressive(model, prompt, params, StopChecker((), 40)))
        copies = CopyDrafter(_tiny_table(model, prompt, params))
        only, stats = _decode(model, drafter, prompt, params, CopyPlanner(tiny_costs, copies, 1.0))
        assert only == plain and _copy_rounds(stats) > 0
        assert stats.target_forwards < len(plain) - 1  # copies saved passes
        harness = Harness(tiny_costs, HarnessConfig(max_nodes=8))
        harness.copies = copies
        both, _ = _decode(model, drafter, prompt, params, harness)
        assert both == plain


def _argmax_table(model, prompt) -> NgramTable:
    """After any token t: the target's most likely token after prompt + [t] (order 1, share 0.9)."""
    entries = {}
    with torch.inference_mode():
        for token in range(model.config.vocab_size):
            cache = model.new_cache(len(prompt) + 2)
            logits = model(torch.tensor([prompt + [token]]), cache).logits[0, -1]
            entries[(token,)] = (int(logits.argmax()), 0.9)
    return NgramTable(entries, order=1)


def test_sampling_with_copy_drafts_keeps_the_target_distribution(tiny, tiny_costs, one_thread):
    """The second token of 600 seeded two-token decodes, each verified through a copy round (the
    table proposing the target's most likely token), follows the target's distribution after
    the most frequent first token (chi-square); the first follows its own."""
    model, drafter = tiny
    prompt = [3, 17, 42, 9, 77, 5]
    params = SamplingParams(temperature=0.6, max_new_tokens=2)
    planner = CopyPlanner(tiny_costs, CopyDrafter(_argmax_table(model, prompt), max_length=1), 1.0)
    firsts: dict[int, int] = {}
    seconds: dict[int, dict[int, int]] = {}
    copied = 0
    n = 600
    for seed in range(n):
        out, stats = _decode(
            model,
            drafter,
            prompt,
            SamplingParams(temperature=0.6, max_new_tokens=2, seed=seed),
            planner,
        )
        copied += _copy_rounds(stats)
        firsts[out[0]] = firsts.get(out[0], 0) + 1
        seconds.setdefault(out[0], {})
        seconds[out[0]][out[1]] = seconds[out[0]].get(out[1], 0) + 1
    assert copied == n  # every second token was a copy round
    with torch.inference_mode():
        cache = model.new_cache(len(prompt) + 4)
        p1 = next_token_distribution(model(torch.tensor([prompt]), cache).logits[0, -1], [], params)
        cache.commit(len(prompt))
        top = max(firsts, key=firsts.get)
        p2 = next_token_distribution(
            model(torch.tensor([[top]]), cache).logits[0, -1], [top], params
        )
    assert chi_square_p_value(firsts, {i: float(v) for i, v in enumerate(p1) if v > 0}, n) > 1e-3
    total = sum(seconds[top].values())
    assert total >= 100
    assert (
        chi_square_p_value(seconds[top], {i: float(v) for i, v in enumerate(p2) if v > 0}, total)
        > 1e-3
    )


def test_seeded_sampling_with_copy_drafts_repeats_itself(tiny, tiny_costs):
    model, drafter = tiny
    prompt = [8, 1, 64, 30, 2, 99, 14]
    copies = CopyDrafter(_tiny_table(model, prompt, SamplingParams(max_new_tokens=30), 30))
    params = SamplingParams(temperature=0.7, max_new_tokens=30, seed=11)
    first, _ = _decode(model, drafter, prompt, params, CopyPlanner(tiny_costs, copies, 0.6))
    again, _ = _decode(model, drafter, prompt, params, CopyPlanner(tiny_costs, copies, 0.6))
    assert first == again and len(first) == 30


# ---- the real embedded model (greedy, 10 prompts x 128 tokens) ----------------------------------
SHIPPED_TABLE = (
    Path(__file__).resolve().parents[2]
    / "promptx"
    / "drafters"
    / "smollm2-135m-instruct"
    / COPY_TABLE
)
REAL_PROMPTS = [
    "a heron standing in a misty pond",
    "a robot watering plants on a balcony",
    "two kids racing paper boats",
    "a steaming cup of coffee on a rainy windowsill",
    "a red vintage car on a desert road",
    "an owl landing on a snowy branch",
    "a crowded night market with lanterns",
    "a surfer riding a huge wave",
    "a cat sleeping on a stack of books",
    "a glass sculpture of a dragon",
]


def _real_greedy_equal(model, tokenizer, drafter, planners):
    """Every prompt decoded plainly and with its planner (cycled over the prompts): token for
    token."""
    params = SamplingParams(max_new_tokens=128)
    copied = 0
    for index, prompt in enumerate(REAL_PROMPTS):
        ids = tokenizer.encode_chat(
            [{"role": "user", "content": f"Write a detailed video prompt: {prompt}"}]
        )
        plain = list(
            decode_autoregressive(model, ids, params, StopChecker(tokenizer.eos_token_ids, 128))
        )
        stats = DecodeStats()
        fast = [
            t
            for chunk in decode_speculative(
                model,
                drafter,
                ids,
                params,
                StopChecker(tokenizer.eos_token_ids, 128),
                stats,
                planners[index % len(planners)](),
            )
            for t in chunk
        ]
        assert fast == plain, prompt
        copied += _copy_rounds(stats) + sum(
            1 for r in stats.rounds if r.get("nodes", 0) and not r.get("plain")
        )
    return copied


def _real_planners(copies):
    def harness():
        planner = Harness(synthetic_table(0.002), HarnessConfig(max_nodes=16))
        planner.copies = copies
        return planner

    return [lambda: CopyPlanner(synthetic_table(0.002), copies, 1.0), harness]


@pytest.mark.slow
def test_greedy_decoding_with_the_shipped_copy_table_equals_plain_decoding_in_fp32(
    fp32_model, trained_drafter
):
    model, tokenizer = fp32_model
    copies = CopyDrafter(
        NgramTable.load(SHIPPED_TABLE, expect_fingerprint=target_fingerprint(model))
    )
    with torch.inference_mode():
        assert _real_greedy_equal(model, tokenizer, trained_drafter, _real_planners(copies)) > 0


@pytest.mark.slow
def test_greedy_decoding_with_copy_drafts_equals_plain_decoding_in_int4(model_dir, one_thread):
    from engine.generator import Generator
    from engine.runtime.int4 import rows_are_independent
    from engine.speculative.checkpoint import load_drafter

    if not rows_are_independent(torch.get_num_threads()):
        pytest.skip("this CPU's int4 kernel mixes rows: no lossless speculation in int4 here")
    generator = Generator.from_dir(model_dir, dtype="int4")
    model = generator.model
    drafter = load_drafter(SHIPPED_TABLE.parent, model, dtype=model.dtype).eval()
    copies = CopyDrafter(
        NgramTable.load(SHIPPED_TABLE, expect_fingerprint=target_fingerprint(model))
    )
    with torch.inference_mode():
        assert _real_greedy_equal(model, generator.tokenizer, drafter, _real_planners(copies)) > 0


def test_seeded_sampling_uses_copy_drafts_only_when_asked():
    """Where the drafter's tree does not pay, sampling decodes plainly unless ``copy_sampling``."""
    dear = synthetic_table(0.5)
    harness = Harness(dear)
    harness.copies = CopyDrafter(None)
    assert harness.for_sampling() is None
    asked = Harness(dear, HarnessConfig(copy_sampling=True))
    asked.copies = CopyDrafter(None)
    planner = asked.for_sampling()
    assert (
        isinstance(planner, CopyPlanner) and not planner.adaptive and planner.copies is asked.copies
    )
