"""Resumable batch runs (``promptx enhance --file IN --output OUT``): ids, recovery of a cut-off
output, and real runs of the command killed halfway and resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from promptx.batch_run import EXIT_ROWS_FAILED, ResultLog, read_rows
from promptx.errors import InvalidInputError
from tests.promptx.runs import output_rows, run_until

ROOT = Path(__file__).resolve().parents[2]
# more rows than one chunk of the run (8): the first chunk is on disk while the rest decode
PROMPTS = [
    "a red car",
    "a blue boat",
    "a green hill",
    "a yellow kite",
    "a white swan",
    "a black cat",
    "an orange lamp",
    "a grey whale",
    "a pink flower",
    "a brown bear",
]


def test_rows_take_their_ids_from_the_file_or_the_line(tmp_path):
    text = tmp_path / "in.txt"
    text.write_text("a cat\n\na dog\n")
    assert [(r.id, r.spec.text) for r in read_rows(text)] == [("1", "a cat"), ("3", "a dog")]
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text(
        '{"id": "cat-1", "prompt": "a cat"}\n{"prompt": "a dog", "target": "sdxl"}\n'
        '{"id": 7, "prompt": "x"}\n'
    )
    rows = read_rows(jsonl)
    assert [r.id for r in rows] == ["cat-1", "2", "7"] and rows[1].spec.task == "sdxl"
    jsonl.write_text('{"id": "cat-1", "prompt": "a cat"}\n{"id": "x", "prompt": 5}\n{oops\n')
    rows = read_rows(jsonl)  # a line that cannot be used: its id where readable, else its line
    assert [(r.id, r.spec) for r in rows[1:]] == [("x", None), ("3", None)]
    assert rows[1].problem == f"{jsonl}:2: needs a non-empty string field 'prompt'"
    jsonl.write_text('{"id": "a", "prompt": "a cat"}\n{"id": "a", "prompt": "a dog"}\n')
    with pytest.raises(InvalidInputError, match=r"in.jsonl:2: id 'a' is already used on line 1"):
        read_rows(jsonl)


def test_a_cut_off_last_line_is_dropped_and_its_row_done_again(tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_text('{"id": "1", "text": "x"}\n{"id": "2", "text": "y"}\n{"id": "3", "te')
    log = ResultLog(out)
    assert log.done == {"1", "2"}
    assert out.read_text().endswith('"y"}\n')
    log.append(['{"id": "3", "text": "z"}'])
    assert ResultLog(out).done == {"1", "2", "3"}
    out.write_text(
        '{"id": "1", "text": "x"}\n{"id": "2", "error": {"type": "T", "message": "m"}}\n'
    )
    assert (
        ResultLog(out).done == {"1"} and out.read_text() == '{"id": "1", "text": "x"}\n'
    )  # "2" is retried
    out.write_text("not json\n")
    with pytest.raises(InvalidInputError, match="not a promptx output line"):
        ResultLog(out)


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
        "--temperature",
        "0",
        "--seed",
        "0",
        "--max-new-tokens",
        "24",
        "--dtype",
        "float32",
        "--strength",
        "full",
    ]  # decoding: slow enough to stop halfway


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_a_run_stopped_halfway_resumes_without_losing_or_repeating_a_row(model_dir, tmp_path, sig):
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    inp.write_text(
        "".join(json.dumps({"id": f"p{i}", "prompt": p}) + "\n" for i, p in enumerate(PROMPTS))
    )
    inp.write_text(
        inp.read_text() + '{"id": "bad", "prompt": "a cat", "target": "no-such-target"}\n'
    )
    command = _command(inp, out)
    stopped = run_until(command, out, 1, sig)
    assert stopped.returncode == (-signal.SIGKILL if sig == signal.SIGKILL else 130), stopped.stderr
    if sig == signal.SIGINT:
        assert (
            "rerun the same command to resume" in stopped.stderr
            and "Traceback" not in stopped.stderr
        )
    before = [r for r in output_rows(out) if "error" not in r]  # an error row is retried
    assert 1 <= len(before) <= len(PROMPTS)
    finished = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert finished.returncode == EXIT_ROWS_FAILED, finished.stderr  # the bad row: an error line
    assert f"{len(before)} already done, 1 with input errors" in finished.stderr
    after = output_rows(out)
    assert after[: len(before)] == before  # what was written stays as it was
    assert sorted(r["id"] for r in after) == sorted(
        [f"p{i}" for i in range(len(PROMPTS))] + ["bad"]
    )
    by_id = {r["id"]: r for r in after}
    assert all(by_id[f"p{i}"]["original_prompt"] == p for i, p in enumerate(PROMPTS))
    assert by_id["bad"]["error"]["type"] == "UnknownTargetError"
    again = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert (
        again.returncode == EXIT_ROWS_FAILED and output_rows(out) == after
    )  # the bad row was last already
    assert f"{len(PROMPTS)} already done, 1 with input errors" in again.stderr


def test_output_needs_a_file(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "promptx", "enhance", "a cat", "--output", str(tmp_path / "o")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PROMPTX_CACHE": str(tmp_path)},
    )
    assert result.returncode == 1 and "use it with --file" in result.stderr
