"""promptx on Ray Data (``promptx.ray``, ``promptx enhance --file --ray``): every row enhanced
exactly once by a pool of actors, with the same greedy text as a local run; a run killed
halfway resumes; without Ray, one line names the extra. Ray runs locally on this machine."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from promptx.batch_run import EXIT_ROWS_FAILED, ResultLog, read_rows, run_batch
from promptx.errors import InvalidInputError
from tests.promptx.runs import output_rows, run_until

ROOT = Path(__file__).resolve().parents[2]
WORDS = ["red", "blue", "green", "yellow", "white"]
THINGS = ["car", "boat", "kite", "lamp", "chair", "cup", "bird", "house"]
# 40 prompts; short float32 greedy decodes without retries keep the test quick and exact
PROMPTS = [f"a {w} {t}" for w in WORDS for t in THINGS]
ENHANCER = {"dtype": "float32", "retries": 0}
OPTIONS = {"temperature": 0.0, "seed": 0, "max_new_tokens": 8}


def _require_ray():
    """Ray with Ray Data; in CI (``CI=true``) its absence is a failure, elsewhere a skip."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("ray[data] is not installed (required in CI: pip install -e '.[dev]')")
        pytest.skip("ray[data] is not installed")
    return ray


@pytest.fixture(scope="module")
def ray_local(model_dir):
    from promptx.ray import start_quietly_at_full_priority

    ray = _require_ray()
    start_quietly_at_full_priority()  # the other test worker must not starve the actors
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield ray
    ray.shutdown()


def _write_rows(path: Path, prompts: list[str]) -> None:
    path.write_text(
        "".join(json.dumps({"id": f"p{i}", "prompt": p}) + "\n" for i, p in enumerate(prompts))
    )


def _local_lines(rows) -> dict[str, dict]:
    from promptx.enhancer import Enhancer

    lines: list[str] = []
    run_batch(Enhancer(**ENHANCER, quiet=True), rows, "sdxl", OPTIONS, log=None, emit=lines.append)
    return {r["id"]: r for r in map(json.loads, lines)}


def test_two_actors_enhance_every_row_once_with_the_text_of_a_local_run(ray_local, tmp_path):
    from promptx.ray import enhance_dataset

    inp = tmp_path / "in.jsonl"
    _write_rows(inp, PROMPTS)
    rows = read_rows(inp)
    ds = ray_local.data.from_items(
        [{"id": r.id, "prompt": r.spec.text} for r in rows], override_num_blocks=8
    )
    out = enhance_dataset(
        ds, "sdxl", workers=2, cpus_per_worker=1, batch_size=8, enhancer_options=ENHANCER, **OPTIONS
    ).take_all()
    assert sorted(r["id"] for r in out) == sorted(r.id for r in rows)  # each row exactly once
    local = _local_lines(rows)
    for r in out:
        line = json.loads(r["promptx"])
        assert line["id"] == r["id"] and line["original_prompt"] == r["prompt"]
        assert r["enhanced"] == line["text"] == local[r["id"]]["text"], r["id"]
        assert r["error"] is None and r["negative_prompt"] == local[r["id"]]["negative_prompt"]


def test_a_dataset_without_the_prompt_column_is_refused(ray_local):
    from promptx.ray import enhance_dataset

    ds = ray_local.data.from_items([{"text": "a cat"}])
    with pytest.raises(InvalidInputError, match="no 'prompt' column"):
        enhance_dataset(ds, "sdxl")


def _command(inp: Path, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "promptx",
        "enhance",
        "--file",
        str(inp),
        "--output",
        str(out),
        "--target",
        "sdxl",
        "--ray",
        "--workers",
        "2",
        "--temperature",
        "0",
        "--seed",
        "0",
        "--max-new-tokens",
        "16",
        "--dtype",
        "float32",
        "--strength",
        "full",
    ]  # decoding: slow enough to stop halfway


@pytest.mark.slow
def test_a_ray_run_killed_halfway_resumes_without_losing_or_repeating_a_row(model_dir, tmp_path):
    _require_ray()
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    prompts = PROMPTS[:24]  # three batches of 8 for two workers: the first lands before the last
    _write_rows(inp, prompts)
    inp.write_text(
        inp.read_text() + '{"id": "bad", "prompt": "a cat", "target": "no-such-target"}\n'
    )
    command = _command(inp, out)
    # the killed driver's local Ray is ended by Ray's own reaper; never "ray stop": it would also
    # end the Ray of this test process, which then aborts a minute later
    stopped = run_until(command, out, 1, signal.SIGKILL)
    assert stopped.returncode == -signal.SIGKILL, stopped.stderr
    before = [r for r in output_rows(out) if "error" not in r]  # an error row is retried
    assert 1 <= len(before) <= len(prompts)
    finished = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert finished.returncode == EXIT_ROWS_FAILED, finished.stderr  # the bad row: an error line
    assert f"{len(before)} already done" in finished.stderr and "Traceback" not in finished.stderr
    counts = re.search(
        r"(\d+) enhanced, 0 passed through as they were, (\d+) returned unchanged, "
        r"(\d+) already done, (\d+) with input errors",
        finished.stderr,
    )
    assert counts and [int(n) for n in counts.groups()] == [
        int(counts[1]),
        len(prompts) - len(before) - int(counts[1]),
        len(before),
        1,
    ]
    after = output_rows(out)
    assert after[: len(before)] == before  # what was written stays as it was
    assert sorted(r["id"] for r in after) == sorted(
        [f"p{i}" for i in range(len(prompts))] + ["bad"]
    )
    assert {r["id"]: r for r in after}["bad"]["error"]["type"] == "UnknownTargetError"
    assert ResultLog(out).done == {r["id"] for r in after} - {"bad"}


def test_without_ray_one_line_names_the_extra(tmp_path):
    fake = tmp_path / "no_ray" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('raise ImportError("No module named ray")\n')
    inp = tmp_path / "in.txt"
    inp.write_text("a cat\n")
    env = {**os.environ, "PYTHONPATH": str(fake.parent)}
    result = subprocess.run(
        [sys.executable, "-m", "promptx", "enhance", "--file", str(inp), "--ray"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert (
        result.stderr.strip()
        == "promptx: error: Ray is not installed: pip install -e '.[ray]' in promptx's checkout"
    )
    usage = subprocess.run(
        [sys.executable, "-m", "promptx", "enhance", "a cat", "--workers", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert usage.returncode == 1 and "use them with --file" in usage.stderr
