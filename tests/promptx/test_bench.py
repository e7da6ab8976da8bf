"""promptx bench: prompt files (promptx.prompt_files), the CLI (promptx.cli.bench) and the
measurement core (engine.bench): pure aggregation on synthetic stats, and one end-to-end run
on the real embedded model (slow)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.bench.peers import Peer, PeerUnavailable

from promptx.errors import InvalidInputError
from promptx.prompt_files import detect_format, read_prompt_file

DOCS = Path(__file__).resolve().parents[2] / "docs" / "bench.md"


def write(path: Path, *lines: str) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# ---- prompt files -------------------------------------------------------------------------------
def test_plain_text_one_prompt_per_line(tmp_path):
    path = write(tmp_path / "p.txt", "a cat on a skateboard", "", "  a dog in the rain  ")
    specs = read_prompt_file(path)
    assert [s.text for s in specs] == ["a cat on a skateboard", "a dog in the rain"]
    assert specs[1].source == f"{path}:3" and specs[0].task is None and not specs[0].raw_chat


def test_jsonl_prompt_task_image(tmp_path):
    path = write(
        tmp_path / "p.jsonl",
        '{"prompt": "a red bike", "task": "i2v", "image": "bike.png"}',
        '{"prompt": "a forest"}',
    )
    assert detect_format(path) == "jsonl"
    first, second = read_prompt_file(path)
    assert (first.text, first.task, first.image) == ("a red bike", "i2v", tmp_path / "bike.png")
    assert second.task is None and second.image is None


def test_specbench_uses_first_turn_raw_chat(tmp_path):
    path = write(
        tmp_path / "question.jsonl",
        '{"question_id": 1, "category": "writing", "turns": ["Write a haiku.", "Now another."]}',
        '{"question_id": 2, "turns": ["What is 2+2?"]}',
    )
    assert detect_format(path) == "specbench"
    first, second = read_prompt_file(path)
    assert (first.text, first.category, first.raw_chat) == ("Write a haiku.", "writing", True)
    assert second.category == "uncategorized"


def test_limit_and_forced_format(tmp_path):
    path = write(tmp_path / "p.jsonl", '{"prompt": "one"}', "not json at all")
    assert [s.text for s in read_prompt_file(path, limit=1)] == ["one"]  # line 2 never parsed
    assert [s.text for s in read_prompt_file(path, "text")] == [
        '{"prompt": "one"}',
        "not json at all",
    ]


@pytest.mark.parametrize(
    "name, lines, message",
    [
        ("p.jsonl", ['{"prompt": "ok"}', '{"prompt": "broken"'], r"p\.jsonl:2: not valid JSON"),
        ("p.jsonl", ['{"prompt": "ok"}', '["a list"]'], r"p\.jsonl:2: expected a JSON object"),
        (
            "p.jsonl",
            ['{"prompt": "ok"}', "", '{"task": "video"}'],
            r"p\.jsonl:3: needs a non-empty string field 'prompt'",
        ),
        (
            "p.jsonl",
            ['{"prompt": "ok", "task": 3}'],
            r"p\.jsonl:1: 'task' must be a non-empty string",
        ),
        ("p.jsonl", ['{"prompt": "ok"}', '{"turns": ["q"]}'], r"p\.jsonl:2: a Spec-Bench line"),
        (
            "q.jsonl",
            ['{"turns": ["q"]}', '{"turns": []}'],
            r"q\.jsonl:2: needs a non-empty list field 'turns'",
        ),
        (
            "q.jsonl",
            ['{"turns": ["q"]}', '{"turns": [7]}'],
            r"q\.jsonl:2: the first turn must be a non-empty string",
        ),
        ("q.jsonl", ['{"turns": ["q"], "category": ""}'], r"q\.jsonl:1: 'category' must be"),
        ("empty.txt", ["", "   "], r"empty\.txt: the prompt file holds no prompts"),
    ],
)
def test_malformed_lines_name_file_and_line(tmp_path, name, lines, message):
    path = write(tmp_path / name, *lines)
    with pytest.raises(InvalidInputError, match=message):
        read_prompt_file(path)


def test_missing_file_and_unknown_format(tmp_path):
    with pytest.raises(InvalidInputError, match="cannot read prompt file"):
        read_prompt_file(tmp_path / "nope.txt")
    with pytest.raises(InvalidInputError, match="unknown prompt file format"):
        read_prompt_file(write(tmp_path / "p.txt", "x"), "csv")


# ---- rendering and options (no model) -----------------------------------------------------------
class RecordingTokenizer:
    def __init__(self):
        self.messages = None

    def encode_chat(self, messages):
        self.messages = messages
        return list(range(len(messages)))


def test_render_prompt_templates_images_and_raw_chat(tmp_path):
    from PIL import Image

    from promptx.cli.bench import render_prompt
    from promptx.profiles.registry import default_registry
    from promptx.prompt_files import PromptSpec

    Image.new("RGB", (64, 48)).save(tmp_path / "in.png")
    tok, registry = RecordingTokenizer(), default_registry()
    ids, task = render_prompt(PromptSpec("a cat", "x:1"), tok, "video", registry)
    assert (
        task == "t2v"
        and tok.messages[0]["role"] == "system"
        and tok.messages[-1]["content"].count("a cat")
    )
    _, task = render_prompt(
        PromptSpec("it turns", "x:2", task="i2v", image=tmp_path / "in.png"), tok, "video", registry
    )
    assert task == "i2v" and "64x48" in tok.messages[-1]["content"]
    _, task = render_prompt(
        PromptSpec("Hi?", "x:3", category="qa", raw_chat=True), tok, "video", registry
    )
    assert task == "qa" and tok.messages == [{"role": "user", "content": "Hi?"}]
    with pytest.raises(InvalidInputError, match="x:4: target 'video'"):
        render_prompt(PromptSpec("a cat", "x:4", image=tmp_path / "in.png"), tok, "video", registry)
    with pytest.raises(InvalidInputError, match="x:5: .*missing.png"):
        render_prompt(
            PromptSpec("a cat", "x:5", task="i2v", image=tmp_path / "missing.png"),
            tok,
            "video",
            registry,
        )
    with pytest.raises(InvalidInputError, match="x:6: unknown target 'nope'"):
        render_prompt(PromptSpec("a cat", "x:6", task="nope"), tok, "video", registry)


def test_option_parsing():
    from promptx.cli.bench import parse_budgets, parse_modes, parse_peers

    assert parse_budgets("8, 16,8") == (8, 16)
    assert parse_modes("tree,none") == ("tree", "none")
    assert parse_peers("none") == () and parse_peers("llamacpp") == ("llamacpp",)
    for bad in ("8,x", "0", ""):
        with pytest.raises(InvalidInputError, match="--budgets"):
            parse_budgets(bad)
    with pytest.raises(InvalidInputError, match="--modes"):
        parse_modes("beam")
    with pytest.raises(InvalidInputError, match="--peers"):
        parse_peers("vllm")


def _cli():
    from promptx.cli.bench import bench
    from promptx.cli.main import main

    if "bench" not in main.commands:
        main.add_command(bench)
    return main


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--concurrency", "0"],
            "--concurrency 0: give a number of concurrent sequences from 1 to 64",
        ),
        (["--budgets", "4,a"], "--budgets '4,a'"),
    ],
)
def test_cli_rejects_with_one_line(tmp_path, args, message):
    path = write(tmp_path / "p.txt", "a cat")
    result = CliRunner().invoke(_cli(), ["bench", str(path), *args])
    lines = result.output.strip().splitlines()
    assert result.exit_code == 1 and len(lines) == 1
    assert lines[0].startswith("promptx: error: ") and message in lines[0]


# ---- engine.bench aggregation (synthetic stats) -------------------------------------------------
def stats_of(accepted, depth):
    from engine.decode.stats import DecodeStats

    stats = DecodeStats()
    for a in accepted:
        stats.record_round(a, depth)
    return stats


def test_tau_roots_and_hit_rates():
    from engine.bench import hit_rates, round_roots, tau_of

    assert round_roots([2, 0, 1]) == [1, 4, 5]
    assert tau_of([2, 0, 1]) == 2.0 and tau_of([]) is None
    hit, conditional = hit_rates([stats_of([2, 0], 3), stats_of([1, 3], 3)])
    assert hit == [3 / 4, 2 / 4, 1 / 4]  # rounds accepting position d / rounds reaching it
    assert conditional == [3 / 4, 2 / 3, 1 / 2]  # / rounds accepting position d-1


def test_tau_by_entropy_quartile_buckets_rounds_by_root_entropy():
    from engine.bench import quartile_edges, tau_by_quartile

    edges = quartile_edges([0.0, 1.0, 2.0, 3.0, 4.0])
    assert edges == [1.0, 2.0, 3.0]
    stats = stats_of([3, 0, 1], 4)  # roots at generated tokens 1, 5, 6
    entropies = [0.0, 0.5, 9, 9, 9, 3.5, 1.5]
    rows = tau_by_quartile([stats], [entropies], edges)
    assert [(r["rounds"], r["tau"]) for r in rows] == [(1, 4.0), (1, 2.0), (0, None), (1, 1.0)]
    assert all(r["tau"] is None for r in tau_by_quartile([stats], [entropies], None))


def test_lossless_and_tree_vs_chain():
    from engine.bench import Sample, compare_tree_chain, lossless_check

    ref = [Sample([1, 2], 1.0), Sample([3], 1.0)]
    assert lossless_check([Sample([1, 2], 1.0), Sample([3], 1.0)], ref, True)["lossless"] is True
    assert lossless_check([Sample([1, 2], 1.0), Sample([4], 1.0)], ref, True)[
        "mismatched_prompts"
    ] == [1]
    assert lossless_check(ref, ref, False)["lossless"] is None
    runs = {
        "chain@8": {"tau": 2.0, "speedup": 1.5, "hit_rate": [0.7]},
        "tree@8": {"tau": 2.5, "speedup": 1.8, "hit_rate": [0.85]},
    }
    (row,) = compare_tree_chain(runs, [8, 16])
    assert row["tree_tau_gain"] == pytest.approx(0.25) and row["tree_first_hit"] == 0.85


def test_config_rejects_concurrency_and_unknown_modes():
    from engine.bench import BenchConfig, BenchError, build_runs

    with pytest.raises(BenchError, match="between 1 and 64"):
        BenchConfig(concurrency=0)
    with pytest.raises(BenchError, match="unknown mode"):
        BenchConfig(modes=("beam",))
    names = [r.name for r in build_runs(BenchConfig(budgets=(8, 16), modes=("tree", "chain")))]
    assert names == ["none", "chain@8", "tree@8", "chain@16", "tree@16"]


def tiny_generator():
    from types import SimpleNamespace

    import torch

    from engine.generator import Generator
    from engine.runtime.config import ModelConfig
    from engine.runtime.model import Transformer

    torch.manual_seed(0)
    cfg = ModelConfig(
        model_type="llama",
        vocab_size=96,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=6,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=256,
    )
    tokenizer = SimpleNamespace(eos_token_ids=(), decode=lambda ids, **_: " ".join(map(str, ids)))
    return Generator(Transformer(cfg).eval(), tokenizer)


def test_peers_are_skipped_with_a_reason():
    from engine.bench import PeerError, make_peers

    stub = tiny_generator()
    peers, skipped = make_peers(["llamacpp"], stub, "nowhere", gguf_path=None)
    assert peers == [] and skipped["llamacpp"]["available"] is False
    reason = "not installed" if importlib.util.find_spec("llama_cpp") is None else "no GGUF file"
    assert reason in skipped["llamacpp"]["skipped"]
    with pytest.raises(PeerError, match="unknown peer"):
        make_peers(["vllm"], stub, "nowhere")


class EnginePeer(Peer):
    """A peer that is the engine's own plain decoder: its output must match the none run."""

    name = "same-engine"
    streams = True

    def __init__(self, generator):
        self.generator = generator

    def generate(self, prompt_ids, params):
        for chunk in self.generator.stream(prompt_ids, params, speculative=False):
            yield from chunk


class FirstTokensPeer(Peer):
    """Answers every prompt with its first three tokens."""

    name, streams = "first-tokens", True

    def generate(self, prompt_ids, params):
        yield from list(prompt_ids)[:3]


class DyingPeer(FirstTokensPeer):
    def generate(self, prompt_ids, params):
        import os
        import signal

        os.kill(os.getpid(), signal.SIGKILL)  # as a native library built for another CPU does
        yield 0


class HangingPeer(FirstTokensPeer):
    def generate(self, prompt_ids, params):
        import time

        time.sleep(3600)
        yield 0


def first_tokens_peer(
    spec,
):  # peer factories: run in the peer's process (spawn imports this module)
    return FirstTokensPeer()


def dying_peer(spec):
    return DyingPeer()


def hanging_peer(spec):
    return HangingPeer()


def unloadable_peer(spec):
    raise PeerUnavailable("no such model here")


def test_a_peer_that_crashes_or_hangs_is_reported_and_the_bench_goes_on(one_thread):
    """Each peer lives in its own process: one killed by a signal or silent past its timeout is
    reported as crashed (with why), the others and the runs are measured as usual."""
    from dataclasses import replace

    from engine.bench import BenchConfig, BenchPrompt, PeerProcess, PeerSpec, close_peers, run_bench

    generator = tiny_generator()
    spec = PeerSpec.of("first-tokens", generator, "nowhere")
    peers = [
        PeerProcess(spec, first_tokens_peer),
        PeerProcess(replace(spec, name="dying"), dying_peer),
        PeerProcess(replace(spec, name="hanging"), hanging_peer, timeout_s=2),
    ]
    prompts = [
        BenchPrompt(tuple(range(3, 15)), "t2v", "a"),
        BenchPrompt(tuple(range(20, 28)), "t2i", "b"),
    ]
    try:
        report = run_bench(
            generator,
            None,
            prompts,
            BenchConfig(max_new_tokens=4, modes=("none",), warmup=True),
            peers=peers,
        )
    finally:
        close_peers(peers)
    fine = report["peers"]["first-tokens"]
    assert (
        fine["available"] and fine["new_tokens"] == 6 and fine["decode_tokens_per_s"]["median"] > 0
    )
    assert report["peers"]["dying"] == {"available": False, "skipped": "crashed: killed by SIGKILL"}
    assert report["peers"]["hanging"] == {
        "available": False,
        "skipped": "crashed: no answer in 2 s",
    }
    assert report["runs"]["none"]["new_tokens"] == 8
    with pytest.raises(PeerUnavailable, match="no such model here"):
        PeerProcess(replace(spec, name="unloadable"), unloadable_peer)


def test_run_bench_on_a_tiny_random_model(one_thread, tmp_path, monkeypatch):
    """Every run (the harness too), a peer, the entropy pass and the report, in seconds of
    compute."""
    from engine.bench import BenchConfig, BenchPrompt, random_drafter, run_bench

    generator = tiny_generator()
    model = generator.model
    prompts = [
        BenchPrompt(tuple(range(3, 15)), "t2v", "a"),
        BenchPrompt(tuple(range(20, 28)), "t2i", "b"),
    ]
    config = BenchConfig(
        max_new_tokens=12, budgets=(2, 4), warmup=True, modes=("chain", "tree", "harness")
    )
    monkeypatch.setenv("PROMPTX_CACHE", str(tmp_path))  # the quick calibration's table lands here
    report = run_bench(
        generator, random_drafter(model), prompts, config, peers=[EnginePeer(generator)]
    )
    assert list(report["runs"]) == ["none", "chain@2", "tree@2", "chain@4", "tree@4", "harness"]
    harness = report["runs"]["harness"]["harness"]
    assert harness["rounds"] > 0  # speculative rounds; plain steps apart
    assert (
        harness["rounds"] + harness["plain_steps"] == report["runs"]["harness"]["target_forwards"]
    )
    assert list((tmp_path / "calibration").glob("*.json"))
    batched = run_bench(
        generator,
        random_drafter(model),
        prompts * 2,
        BenchConfig(max_new_tokens=12, budgets=(4,), concurrency=3, modes=("tree", "harness")),
    )
    assert batched["settings"]["concurrency"] == 3
    assert all(r["lossless"] for r in batched["runs"].values())
    assert batched["runs"]["harness"]["harness"]["rounds"] > 0
    assert all(r["lossless"] for r in report["runs"].values())
    assert report["peers"]["same-engine"]["same_output_as_engine"] == 1.0
    assert (
        report["peers"]["same-engine"]["decode_tokens_per_s"]["median"] > 0
    )  # streamed: prefill timed apart
    tree = report["runs"]["tree@4"]
    assert set(tree["tau_by_task"]) == {"t2v", "t2i"} and tree["tau"] >= 1.0
    assert sum(q["rounds"] for q in tree["tau_by_entropy_quartile"]) == tree["rounds"]
    assert [r["budget"] for r in report["budget_scaling"]["chain"]] == [2, 4]
    assert [r["budget"] for r in report["tree_vs_chain"]] == [2, 4]
    json.dumps(report)  # JSON-able as is


# ---- end to end on the real model ---------------------------------------------------------------
def documented_fields() -> list[tuple[str, bool]]:
    """(path, required) for every row of the JSON schema table in docs/bench.md."""
    rows = re.findall(r"^\| `([^`]+)` \| ([^|]+) \|", DOCS.read_text(), flags=re.M)
    schema = rows[rows.index(next(r for r in rows if r[0] == "schema_version")) :]
    return [(path, "optional" not in kind) for path, kind in schema]


def resolve(value, parts: list[str]) -> list:
    """Every value at a documented path; raises KeyError when a required key is missing."""
    if not parts:
        return [value]
    head, rest = parts[0], parts[1:]
    if value is None:
        return []
    if head.startswith("<"):
        return [v for item in value.values() for v in resolve(item, rest)]
    key, is_list = head.removesuffix("[]"), head.endswith("[]")
    item = value[key]
    return (
        [v for element in item for v in resolve(element, rest)] if is_list else resolve(item, rest)
    )


@pytest.fixture(scope="module")
def generator(one_thread, model_dir, fp32_model):
    """(model directory, Generator) over the session's float32 embedded model (tests/conftest.py:
    skipped with the reason when the model is not installed, a failure in CI)."""
    from engine.generator import Generator

    return model_dir, Generator(*fp32_model)


@pytest.fixture(scope="module")
def bench_run(generator, tmp_path_factory, request):
    import promptx.cli.bench as bench_cli
    from promptx.models import resolve_model

    directory, gen = generator
    tmp = tmp_path_factory.mktemp("bench")
    questions = write(
        tmp / "question.jsonl",
        '{"category": "qa", "turns": ["Name three primary colors."]}',
        '{"category": "math", "turns": ["What is two plus two?"]}',
    )
    patch = pytest.MonkeyPatch()
    patch.setattr(
        bench_cli,
        "load_generator",
        lambda model, dtype, device, **_: (resolve_model(None), directory, gen),
    )
    try:
        result = CliRunner().invoke(
            _cli(),
            [
                "bench",
                str(questions),
                "--max-new-tokens",
                "16",
                "--budgets",
                "1",
                "--no-warmup",
                "--out",
                str(tmp / "out"),
            ],
        )
    finally:
        patch.undo()
    assert result.exit_code == 0, result.output
    return result, json.loads((tmp / "out" / "bench.json").read_text()), tmp / "out"


@pytest.mark.slow
def test_bench_end_to_end_writes_every_documented_field(bench_run):
    _, report, _ = bench_run
    fields = documented_fields()
    assert len(fields) > 80
    for path, required in fields:
        try:
            resolve(report, path.split("."))
        except (KeyError, TypeError):
            if required:
                raise AssertionError(f"bench.json lacks the documented field {path}") from None
    assert list(report["runs"]) == ["none", "chain@1", "tree@1", "harness"]
    assert all(run["lossless"] is True for run in report["runs"].values())
    assert {p["task"] for p in report["prompts"]} == {"qa", "math"}
    assert report["drafter"]["random"] is False and report["drafter"]["path"]  # the shipped drafter
    assert not any("meaningless" in w for w in report["warnings"])
    peers = report["peers"]
    assert (
        peers["transformers"]["available"] and peers["transformers"]["tokens_per_s"]["median"] > 0
    )
    if importlib.util.find_spec("llama_cpp") is None:
        assert "not installed" in peers["llamacpp"]["skipped"]
    assert all(
        len(run["tau_by_entropy_quartile"]) == 4
        for name, run in report["runs"].items()
        if name != "none"
    )
    assert all(run["decode_tokens_per_s"]["median"] > 0 for run in report["runs"].values())


def test_decode_speed_leaves_out_the_prompt_pass():
    from engine.bench.analysis import decode_tokens_per_second
    from engine.bench.runs import Sample
    from engine.decode.stats import DecodeStats

    stats = DecodeStats()
    stats.prefill_s = 0.2
    assert decode_tokens_per_second(Sample([1, 2, 3, 4, 5], 1.0, stats)) == pytest.approx(
        5.0
    )  # 4 tokens in 0.8 s
    assert decode_tokens_per_second(Sample([1, 2, 3], 1.0, None)) is None  # generate(): all at once
    assert decode_tokens_per_second(
        Sample([1, 2, 3], 1.0, None, first_token_s=0.5)
    ) == pytest.approx(4.0)  # streamed
    assert decode_tokens_per_second(Sample([1], 1.0, stats)) is None
    assert decode_tokens_per_second(Sample([1, 2], 0.1, stats)) is None


@pytest.mark.slow
def test_markdown_summary_renders(bench_run):
    from promptx.cli.bench import markdown_summary

    result, report, out = bench_run
    text = markdown_summary(report)
    assert "| run | tok/s (median)" in text and "| chain@1 |" in text and "| tree@1 |" in text
    assert (
        "transformers (peer)" in text
        and "### tree vs chain" in text
        and "warning: no trained drafter" not in text
    )
    assert "| run | tok/s (median)" in result.stdout
    assert (out / "summary.md").read_text() == text


@pytest.mark.slow
def test_plots_written_when_matplotlib_present(bench_run):
    _, report, out = bench_run
    if importlib.util.find_spec("matplotlib") is None:
        assert (
            any("matplotlib is not installed" in n for n in report["notes"])
            and report["plots"] == []
        )
        pytest.skip("matplotlib is not installed (extra 'plot')")
    from promptx.cli.bench import PLOT_NAMES

    assert report["plots"] == list(PLOT_NAMES)
    for name in PLOT_NAMES:
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_entropy_rows_predict_the_greedy_tokens(generator):
    import torch

    from engine.bench import next_token_logits
    from engine.decode.sampling import SamplingParams

    _, gen = generator
    ids = gen.tokenizer.encode_chat([{"role": "user", "content": "Name three primary colors."}])
    tokens = gen.generate(ids, SamplingParams(max_new_tokens=4), speculative=False)
    (logits,) = next_token_logits(gen.model, ids, [tokens])
    assert logits.shape[0] == len(tokens) + 1
    assert torch.argmax(logits[:-1], dim=-1).tolist() == tokens


def test_harness_summary_counts_plain_steps_apart_from_rounds():
    from engine.bench import harness_summary
    from engine.decode.stats import DecodeStats

    stats = DecodeStats()
    stats.rounds = [
        {
            "nodes": 4,
            "depth": 2,
            "predicted_accepted": 1.5,
            "accepted": 2,
            "predicted_s": 0.2,
            "seconds": 0.25,
        },
        {
            "plain": True,
            "nodes": 0,
            "depth": 0,
            "accepted": 0,
            "predicted_accepted": None,
            "predicted_s": None,
            "seconds": 0.1,
        },
    ]
    summary = harness_summary([stats])
    assert summary["rounds"] == 1 and summary["plain_steps"] == 1 and summary["mean_nodes"] == 4
    assert harness_summary([DecodeStats()]) == {"rounds": 0, "plain_steps": 0}


# ---- the shipped enhance-400 suite --------------------------------------------------------------
def test_the_enhance_400_suite_holds_100_prompts_per_task_in_turn():
    from promptx.cli.bench import suite_file
    from promptx.profiles.registry import default_registry

    specs = read_prompt_file(suite_file("enhance-400"), "auto")
    tasks = [s.task for s in specs]
    assert len(specs) == 400 and {t: tasks.count(t) for t in set(tasks)} == {
        "video": 100,
        "image-to-video": 100,
        "image": 100,
        "image-to-image": 100,
    }
    assert len(set(tasks[:4])) == 4  # --num-prompts 4 covers every task
    assert len({s.id for s in specs}) == 400 and len({(s.task, s.text) for s in specs}) == 400
    assert all(s.caption for s in specs if s.task in ("image-to-video", "image-to-image"))
    assert all(s.image is None for s in specs)  # the package carries no images
    registry = default_registry()
    assert all(registry.get(t) for t in set(tasks))


@pytest.mark.parametrize(
    "args, message",
    [
        (["--suite", "nope"], "unknown suite 'nope'; shipped suites: enhance-400"),
        ([], "give a PROMPT_FILE or --suite NAME"),
    ],
)
def test_suite_errors_are_one_line(tmp_path, args, message):
    result = CliRunner().invoke(_cli(), ["bench", *args])
    assert (
        result.exit_code in (1, 2) and message in result.output and "Traceback" not in result.output
    )


@pytest.mark.slow
def test_a_suite_run_reports_speed_per_task(tmp_path):
    result = CliRunner().invoke(
        _cli(),
        [
            "bench",
            "--suite",
            "enhance-400",
            "--num-prompts",
            "4",
            "--max-new-tokens",
            "8",
            "--modes",
            "none",
            "--peers",
            "none",
            "--threads",
            "1",
            "--no-warmup",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "bench.json").read_text())
    assert sorted(report["runs"]["none"]["tokens_per_s_by_task"]) == ["i2i", "i2v", "t2i", "t2v"]
    assert "### tok/s per task" in (tmp_path / "summary.md").read_text()


@pytest.mark.parametrize(
    "flag, seen", [("--cuda-graphs", True), ("--no-cuda-graphs", False), (None, None)]
)
def test_bench_passes_the_cuda_graphs_switch_to_the_model_it_loads(
    tmp_path, monkeypatch, flag, seen
):
    import promptx.cli.bench as bench_cli

    loads = []

    def load(model, dtype, device, *, cuda_graphs=None):
        loads.append(cuda_graphs)
        raise InvalidInputError("stop here")

    monkeypatch.setattr(bench_cli, "load_generator", load)
    prompts = write(tmp_path / "p.txt", "a cat")
    result = CliRunner().invoke(
        _cli(), ["bench", str(prompts), "--peers", "none"] + ([flag] if flag else [])
    )
    assert loads == [seen] and "stop here" in result.output


def test_the_harness_run_prices_copy_drafts_from_the_table_beside_a_trained_drafter(
    one_thread, tmp_path, monkeypatch
):
    """``promptx bench``'s harness run is the harness ``enhance`` uses: with a copy table beside a
    trained drafter it prices copy drafts (``settings.copy_drafts``), still lossless; a random
    drafter, or $PROMPTX_COPY_DRAFTS=0, runs without them."""
    from engine import COPY_TABLE, CopyDrafter, Harness, NgramTable, target_fingerprint
    from engine.bench import BenchConfig, BenchPrompt, random_drafter, run_bench
    from promptx.cli.bench import copy_drafts_for

    generator = tiny_generator()
    model = generator.model
    prompts = [BenchPrompt(tuple(range(3, 15)), "t2v", "a")]
    table = NgramTable.build(
        [list(range(3, 15)) * 3], order=2, min_count=2, fingerprint=target_fingerprint(model)
    )
    table.save(tmp_path / COPY_TABLE)
    trained = {"path": str(tmp_path), "random": False}
    copies = copy_drafts_for(generator, trained)
    assert isinstance(copies, CopyDrafter)
    assert copy_drafts_for(generator, {"path": None, "random": True}) is None
    monkeypatch.setenv("PROMPTX_COPY_DRAFTS", "0")
    assert copy_drafts_for(generator, trained) is None
    monkeypatch.setenv("PROMPTX_CACHE", str(tmp_path))  # the quick calibration's table lands here
    # the harness's plain runs, where copy rounds go, as on a CPU where speculation does not pay:
    # whether it pays is measured per decode, and under load the measurement could go either way
    monkeypatch.setattr(Harness, "plain_steps", lambda self, context: 1 << 30)
    config = BenchConfig(max_new_tokens=12, modes=("harness",), warmup=False)
    report = run_bench(generator, random_drafter(model), prompts, config, copies=copies)
    assert report["settings"]["copy_drafts"] and report["runs"]["harness"]["lossless"]
    assert report["runs"]["harness"]["harness"]["copy_rounds"] > 0  # the prompt repeats: copied
    plain = run_bench(generator, random_drafter(model), prompts, config)
    assert plain["settings"]["copy_drafts"] is False
