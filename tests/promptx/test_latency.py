"""promptx bench --latency (promptx.latency, promptx.cli.bench_latency): the stage clock, the
summaries, and warm enhance calls on the real embedded model (slow: a few short calls)."""

from __future__ import annotations

import importlib.util
import json
import threading
import time

import pytest
from click.testing import CliRunner

from engine.bench.peers import Peer, PeerUnavailable
from engine.bench.sample import Sample
from engine.decode.sampling import SamplingParams

from promptx.latency import STAGES, LatencyItem, StageClock, compare, spread, summarize

# three tasks, the first two with a decoding constraint or a caption: a few tokens each
ITEMS = [
    LatencyItem("a cat on a skateboard", "video", label="t2v"),
    LatencyItem(
        "a close up of a blue and orange liquid",
        "image-to-video",
        caption="a close up of a blue and orange liquid",
        label="i2v",
    ),
    LatencyItem("a photo of a bench", "image", label="t2i"),
]
NEW_TOKENS = 8


# ---- the clock and the summaries (no model) -----------------------------------------------------
def test_the_clock_charges_each_moment_to_the_innermost_stage():
    clock = StageClock()
    with clock.stage("render"):  # not started: nothing counted, nothing raised
        pass
    clock.start()
    started = time.perf_counter()
    with clock.stage("generate"):
        time.sleep(0.02)
        with clock.stage("render"):
            time.sleep(0.01)

    def in_another_thread():
        with clock.stage("cleanup"):  # ignored: only the thread that started counts
            time.sleep(0.001)

    elsewhere = threading.Thread(target=in_another_thread)
    elsewhere.start()
    elsewhere.join()
    seconds = clock.stop()
    wall = time.perf_counter() - started
    assert set(seconds) == {"other", "generate", "render"}
    assert seconds["render"] >= 0.01 and seconds["generate"] >= 0.02
    assert sum(seconds.values()) == pytest.approx(wall, abs=1e-3)  # a partition of the wall time


def test_spread_and_a_comparison_without_a_peer():
    assert spread([]) is None and spread([None]) is None
    one = spread([2.0])
    assert one["median"] == one["p90"] == one["mean"] == 2.0
    assert spread([1.0, 2.0, 3.0, 4.0, 5.0])["p90"] == pytest.approx(4.6)
    row = {
        "stages_s": dict.fromkeys(STAGES, 0.1),
        "total_s": 0.7,
        "new_tokens": 5,
        "prompt_tokens": 9,
        "decode_tokens_per_s": 40.0,
        "tokens_per_s": 7.0,
        "attempts": 1,
        "fallback": False,
        "acceptance_length": None,
        "speculative": False,
        "other_s": {"backend": 0.05, "enhancer": 0.05},
    }
    summary = summarize([row])
    assert set(summary["stages"]) == set(STAGES) and summary["total"]["median_ms"] == pytest.approx(
        700
    )
    assert compare([row], "llamacpp") == {
        "peer": "llamacpp",
        "available": False,
        "skipped": "no request generated tokens to compare",
    }
    crashed = compare([{**row, "peer": None}], "llamacpp", crashed="killed by SIGILL")
    assert crashed["available"] is False and "SIGILL" in crashed["skipped"]


def amx_less_peer(spec):
    """A llama.cpp stand-in (built in the peer's process) that dies of SIGILL while loading unless
    its extra buffer types are off, as llama-cpp-python 0.3.36's AMX kernels did on the 2-vCPU
    Xeon."""
    import os
    import signal

    from engine.bench.peers import PeerSpec

    assert isinstance(spec, PeerSpec) and spec.ignore_eos
    if spec.extra_buffers:
        os.kill(os.getpid(), signal.SIGILL)
    return CountingPeer()


def test_llama_cpp_killed_by_sigill_while_loading_is_started_without_extra_buffers(
    one_thread, monkeypatch
):
    import engine.bench.peer_process as peer_process
    from engine.bench import close_peers, make_peers
    from engine.bench.peer_process import PeerProcess

    from tests.promptx.test_bench import tiny_generator

    monkeypatch.setattr(peer_process, "check_available", lambda spec: None)  # installed or not

    peers, skipped = make_peers(
        ["llamacpp"],
        tiny_generator(),
        "nowhere",
        "model.gguf",
        factory=amx_less_peer,
        ignore_eos=True,
    )
    try:
        assert skipped == {} and isinstance(peers[0], PeerProcess)
        assert "SIGILL" in peers[0].note and "without them" in peers[0].note
        assert len(peers[0].decode([1, 2, 3], SamplingParams(max_new_tokens=4)).tokens) == 4
    finally:
        close_peers(peers)


# ---- warm calls on the real model ---------------------------------------------------------------
@pytest.fixture(scope="module")
def enhancer(one_thread, model_dir):
    """The embedded default model as ``promptx.enhance`` loads it (its precision, its drafter);
    ``model_dir`` skips (or fails in CI) when it is not installed."""
    from promptx.enhancer import Enhancer

    enhancer = Enhancer(
        None, quiet=True, strength="full", retries=0
    )  # one attempt a call: 8 tokens never pass
    enhancer.backend  # loaded here, not in the first test's timing
    return enhancer


class CountingPeer(Peer):
    """Answers with as many tokens as asked for, recording what it was given."""

    name, streams = "llamacpp", True

    def __init__(self):
        self.asked = []

    def decode(self, prompt_ids, params):
        self.asked.append((list(prompt_ids), params.max_new_tokens))
        return Sample([0] * params.max_new_tokens, 0.05, first_token_s=0.01)

    def generate(self, prompt_ids, params):  # decode is overridden
        raise AssertionError


@pytest.mark.slow
def test_stages_partition_each_call_and_the_peer_gets_the_same_work(enhancer):
    from promptx.latency import measure_latency

    peer = CountingPeer()
    report = measure_latency(enhancer, ITEMS, max_new_tokens=NEW_TOKENS, peer=peer)
    rows, latency = report["requests"], report["latency"]
    assert report["warmup_calls"] == 3 and len(rows) == 3  # one per target, then the three counted
    for row in rows:
        assert set(row["stages_s"]) == set(STAGES) and all(v >= 0 for v in row["stages_s"].values())
        assert (
            row["stages_s"]["prefill"] > 0 and row["stages_s"]["decode"] > 0 and row["engine_stats"]
        )
        # the stages partition the call: they add up to its wall time but for the clock's own reads
        assert sum(row["stages_s"].values()) == pytest.approx(row["total_s"], abs=2e-3)
        assert 0 < row["new_tokens"] <= NEW_TOKENS * row["attempts"] and row["prompt_tokens"] > 20
        assert row["peer"]["new_tokens"] == row["new_tokens"]
    assert set(latency["stages"]) == set(STAGES)
    assert latency["stages"]["scoring"]["median_ms"] == 0.0  # full strength scores nothing
    assert (
        latency["stages"]["render"]["median_ms"] > 0
        and latency["stages"]["cleanup"]["median_ms"] > 0
    )
    # means add up exactly (a partition); medians of parts need not add up to the median whole: with
    # three calls of 8 tokens whose time is ~90% prefill + decode, they stay within a quarter of it
    assert sum(v["mean_ms"] for v in latency["stages"].values()) == pytest.approx(
        latency["total"]["mean_ms"], rel=1e-3
    )
    assert latency["stage_medians_sum_ms"] == pytest.approx(latency["total"]["median_ms"], rel=0.25)
    # the peer decoded every attempt's own prompt ids (warm-up calls included) to its number of new
    # tokens
    assert all(r["generations"] == r["attempts"] == 1 for r in rows)
    assert len(peer.asked) == 3 + 3 and all(n >= 1 for _, n in peer.asked)
    assert [(len(ids), n) for ids, n in peer.asked[3:]] == [
        (r["prompt_tokens"], r["new_tokens"]) for r in rows
    ]
    comparison = report["comparison"]
    assert comparison["available"] and comparison["requests"] == 3
    assert comparison["total_ratio"]["median"] > 0 and comparison["decode_tps_ratio"]["median"] > 0
    json.dumps(report)
    # the timing wrappers are gone again
    assert not {"_request", "_postprocess", "_counted"} & set(vars(enhancer))
    assert not {"encode", "generate_many", "score_phrases"} & set(vars(enhancer.backend))
    assert "_gather" not in vars(enhancer.batcher) and "banned_ids" not in vars(
        enhancer.backend._vocabulary()
    )


def _cli():
    from promptx.cli.bench import bench
    from promptx.cli.main import main

    if "bench" not in main.commands:
        main.add_command(bench)
    return main


@pytest.mark.slow
def test_the_latency_report_without_llama_cpp(enhancer, tmp_path, monkeypatch):
    """llama.cpp missing: the comparison says unavailable and why, the run succeeds, the JSON is
    whole."""
    import engine.bench.peer_process as peer_process
    import promptx.enhancer as enhancer_module

    def missing(spec):
        raise PeerUnavailable("llama-cpp-python is not installed (pip install llama-cpp-python)")

    monkeypatch.setattr(peer_process, "check_available", missing)
    monkeypatch.setattr(
        enhancer_module, "Enhancer", lambda *args, **kwargs: enhancer
    )  # the loaded model
    result = CliRunner().invoke(
        _cli(),
        [
            "bench",
            "--suite",
            "enhance-400",
            "--latency",
            "--num-prompts",
            "2",
            "--max-new-tokens",
            str(NEW_TOKENS),
            "--no-warmup",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "bench.json").read_text())
    assert report["mode"] == "latency" and report["settings"]["strength"] == "full"
    assert report["settings"]["num_prompts"] == 2 and report["settings"]["warmup_calls"] == 0
    assert [r["task"] for r in report["requests"]] == ["t2v", "i2v"]
    assert set(report["latency"]["stages"]) == set(STAGES)
    assert all(
        set(v) == {"median_ms", "p90_ms", "mean_ms"} for v in report["latency"]["stages"].values()
    )
    assert report["comparison"] == {
        "peer": "llamacpp",
        "available": False,
        "label": "llama.cpp",
        "skipped": "llama-cpp-python is not installed (pip install llama-cpp-python)",
    }
    summary = (tmp_path / "summary.md").read_text()
    assert "| stage | median ms | p90 ms | mean ms |" in summary and "| prefill |" in summary
    assert "llama.cpp: unavailable (llama-cpp-python is not installed" in summary
    assert summary in result.stdout


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed"
)
def test_llama_cpp_decodes_the_same_token_counts(enhancer):
    """The real llama.cpp in its own process, through EOS to promptx's token counts."""
    from engine.bench import close_peers, make_peers

    from promptx.latency import measure_latency
    from promptx.models import prepare

    backend = enhancer.backend
    peers, skipped = make_peers(
        ["llamacpp"],
        backend.generator,
        prepare(backend.source, quiet=True),
        backend.source.gguf,
        ignore_eos=True,
        keep_prefix=backend.generator.prefixes is not None,
    )
    if skipped:
        pytest.skip(skipped["llamacpp"]["skipped"])
    try:
        report = measure_latency(
            enhancer, ITEMS[:1], max_new_tokens=NEW_TOKENS, peer=peers[0], warmup=False
        )
    finally:
        close_peers(peers)
    for row in report["requests"]:
        assert row["peer"]["new_tokens"] == row["new_tokens"] and row["peer"]["seconds"] > 0
    assert (
        report["comparison"]["available"] and report["comparison"]["decode_tps_ratio"]["median"] > 0
    )
