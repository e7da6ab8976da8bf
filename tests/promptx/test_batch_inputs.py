"""Batch runs (``promptx enhance --file``) given inputs that cannot be used: a bad line becomes an
error line and the run goes on, what would fail every row fails once up front, a bad ``--output``
is refused before any row, error rows are retried on resume, and the exit status tells a script
whether every row was written. Light strength (the default): no model is loaded."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from promptx.batch_run import EXIT_ROWS_FAILED, ResultLog
from promptx.cli.main import main
from promptx.errors import InvalidInputError
from promptx.prompt_files import ROW_FIELDS, read_batch_file, read_prompt_file

GOOD = '{"id": "car", "prompt": "a red car"}'


def _write(path: Path, *lines: str, bom: bool = False) -> Path:
    path.write_text(("\ufeff" if bom else "") + "\n".join(lines) + "\n", encoding="utf-8")
    return path


def _enhance(inp: Path, *args: str):
    return CliRunner().invoke(main, ["enhance", "--file", str(inp), "--target", "sdxl", *args])


def _lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def _by_id(rows: list[dict]) -> dict[str, dict]:
    return {row["id"]: row for row in rows}


def test_each_unusable_line_is_an_error_line_and_the_run_goes_on(tmp_path):
    inp = tmp_path / "in.jsonl"
    inp.write_text(
        "\n".join(
            [
                GOOD,
                "not json",
                '["a list"]',
                '{"id": "empty", "prompt": "  "}',
                '{"id": 70, "prompt": 3}',
                '{"task": "video"}',
                '{"prompt": "a cat"}',
                '{"id": "cut", "prompt": "a c',
            ]
        )
    )  # the last line cut off: no id to read
    out = tmp_path / "out.jsonl"
    result = _enhance(inp, "--output", str(out))
    assert result.exit_code == EXIT_ROWS_FAILED, result.output
    rows = _by_id(_lines(out.read_text()))
    assert rows["car"]["original_prompt"] == "a red car" and rows["7"]["original_prompt"] == "a cat"
    expected = {
        "2": ":2: not valid JSON",
        "3": ":3: expected a JSON object, got list",
        "empty": ":4: needs a non-empty string field 'prompt'",
        "70": ":5: needs a non-empty string field",
        "6": ":6: needs a non-empty string field 'prompt'",
        "8": ":8: not valid JSON",
    }
    assert set(rows) == {"car", "7", *expected}
    for row_id, message in expected.items():
        assert rows[row_id]["error"] == {
            "type": "InvalidInputError",
            "message": rows[row_id]["error"]["message"],
        }
        assert rows[row_id]["error"]["message"].startswith(f"{inp}{message}"), rows[row_id]
    assert (
        "2 enhanced, 0 passed through as they were, 0 returned unchanged, 0 already done, "
        "6 with input errors" in result.stderr
    )


def test_without_output_the_error_lines_go_to_stdout_in_input_order(tmp_path):
    result = _enhance(_write(tmp_path / "in.jsonl", GOOD, "{oops", '{"prompt": "a cat"}'))
    assert result.exit_code == EXIT_ROWS_FAILED
    rows = _lines(result.stdout)
    assert [row["id"] for row in rows] == ["car", "2", "3"] and "error" in rows[1]


def test_an_unknown_field_is_an_error_line_naming_it_and_the_fields_a_row_has(tmp_path):
    inp = _write(
        tmp_path / "in.jsonl",
        '{"id": "a", "prompt": "a cat", "negative": "dogs", "colour": 1}',
        GOOD,
    )
    result = _enhance(inp)
    assert result.exit_code == EXIT_ROWS_FAILED
    error = _by_id(_lines(result.stdout))["a"]["error"]
    assert error["message"] == (
        f"{inp}:1: unknown fields 'colour', 'negative'; a row has: " + ", ".join(ROW_FIELDS)
    )
    assert ROW_FIELDS == ("prompt", "task", "target", "image", "caption", "id")
    # benchmarks read the same files: their suites carry other fields ("source"), and a bad line
    # still raises
    suite = _write(
        tmp_path / "suite.jsonl", '{"id": "a", "prompt": "a cat", "source": "VBench"}', "{oops"
    )
    assert read_prompt_file(suite, limit=1)[0].text == "a cat"
    with pytest.raises(InvalidInputError, match=r"suite\.jsonl:2: not valid JSON"):
        read_prompt_file(suite)
    assert [type(item).__name__ for item in read_batch_file(suite)] == ["BadLine", "BadLine"]


def test_ids_are_still_unique_up_front_counting_the_readable_ids_of_bad_lines(tmp_path):
    inp = _write(tmp_path / "in.jsonl", GOOD, '{"id": "car", "prompt": 5}')
    result = _enhance(inp)
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.strip() == f"promptx: error: {inp}:2: id 'car' is already used on line 1"


@pytest.mark.parametrize(
    "name, line", [("in.txt", "a red car"), ("in.jsonl", '{"prompt": "a red car"}')]
)
def test_a_byte_order_mark_is_not_part_of_the_first_prompt(tmp_path, name, line):
    result = _enhance(_write(tmp_path / name, line, bom=True))
    assert result.exit_code == 0, result.output
    assert _lines(result.stdout)[0]["original_prompt"] == "a red car"
    assert read_prompt_file(tmp_path / name)[0].text == "a red car"


def test_a_line_holding_u2028_is_one_row(tmp_path):
    jsonl = tmp_path / "in.jsonl"  # what promptx writes itself (ensure_ascii=False)
    jsonl.write_text(
        json.dumps({"prompt": "a red car\u2028at dusk"}, ensure_ascii=False) + "\n" + GOOD + "\n"
    )
    assert [row["id"] for row in _lines(_enhance(jsonl).stdout)] == ["1", "car"]
    text = _write(tmp_path / "in.txt", "a red car\u2028at dusk", "a cat")
    assert [row["id"] for row in _lines(_enhance(text).stdout)] == ["1", "2"]


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--target", "nosuch"], "unknown target 'nosuch'"),
        (["--target", "i2v", "--image", "{tmp}/none.png"], "not found"),
        (["--target", "i2v", "--image", "{tmp}/in.jsonl"], "image"),  # not an image
    ],
)
def test_an_option_that_fails_every_row_fails_once_before_any_row(tmp_path, args, needle):
    inp, out = _write(tmp_path / "in.jsonl", GOOD, '{"prompt": "a cat"}'), tmp_path / "out.jsonl"
    result = _enhance(inp, "--output", str(out), *[a.format(tmp=tmp_path) for a in args])
    assert result.exit_code == 1 and result.stdout == "" and needle in result.stderr, result.output
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("promptx: error: ")
    assert not out.exists()  # nothing was run or opened


def test_exit_status_is_zero_only_when_every_row_was_written(tmp_path):
    fine = _enhance(_write(tmp_path / "in.jsonl", GOOD))
    assert fine.exit_code == 0
    row_target = _enhance(
        _write(tmp_path / "in.jsonl", GOOD, '{"prompt": "a cat", "target": "nosuch"}')
    )
    assert row_target.exit_code == EXIT_ROWS_FAILED
    assert _by_id(_lines(row_target.stdout))["2"]["error"]["type"] == "UnknownTargetError"


@pytest.mark.parametrize("where", ["missing/out.jsonl", "in.jsonl/out.jsonl"])
def test_an_output_that_cannot_be_written_is_refused_before_any_row(tmp_path, where):
    inp = _write(tmp_path / "in.jsonl", GOOD)
    result = _enhance(inp, "--output", str(tmp_path / where))
    assert result.exit_code == 1 and result.stdout == "" and "internal error" not in result.stderr
    assert result.stderr.strip().startswith(
        f"promptx: error: cannot write the output file {tmp_path / where}: "
    )
    with pytest.raises(InvalidInputError, match="cannot write the output file"):
        ResultLog(tmp_path)  # a folder (the CLI's click refuses it)


def test_the_output_cannot_be_the_prompt_file(tmp_path, monkeypatch):
    inp = _write(tmp_path / "in.jsonl", GOOD)
    (tmp_path / "link.jsonl").symlink_to(inp)
    monkeypatch.chdir(tmp_path)
    for output in [str(inp), "link.jsonl", "./in.jsonl", f"{tmp_path}/../{tmp_path.name}/in.jsonl"]:
        result = _enhance(inp, "--output", output)
        assert result.exit_code == 1, (output, result.output)
        assert (
            "is the prompt file" in result.stderr
            and "write the results to another file" in result.stderr
        )
    assert inp.read_text() == GOOD + "\n"


def test_a_resumed_run_retries_the_error_rows_and_each_id_is_written_once(tmp_path):
    inp = _write(
        tmp_path / "in.jsonl",
        GOOD,
        '{"id": "cat", "prompt": "a cat", "target": "nosuch"}',
        '{"id": "dog", "promt": "a dog"}',
    )
    out = tmp_path / "out.jsonl"
    first = _enhance(inp, "--output", str(out))
    assert first.exit_code == EXIT_ROWS_FAILED and ResultLog(out).done == {"car"}
    again = _enhance(inp, "--output", str(out))  # still wrong: the same lines
    assert (
        again.exit_code == EXIT_ROWS_FAILED
        and "1 already done, 2 with input errors" in again.stderr
    )
    assert sorted(row["id"] for row in _lines(out.read_text())) == ["car", "cat", "dog"]
    _write(
        inp,
        GOOD,
        '{"id": "cat", "prompt": "a cat", "target": "sdxl"}',
        '{"id": "dog", "prompt": "a dog"}',
    )
    fixed = _enhance(inp, "--output", str(out))
    assert fixed.exit_code == 0, fixed.output
    assert (
        "2 enhanced, 0 passed through as they were, 0 returned unchanged, 1 already done, "
        "0 with input errors"
    ) in fixed.stderr
    rows = _lines(out.read_text())
    assert [row["id"] for row in rows] == ["car", "cat", "dog"] and not any(
        "error" in row for row in rows
    )
    assert sorted(os.listdir(tmp_path)) == ["in.jsonl", "out.jsonl"]  # no temporary file left


def test_opening_an_output_drops_error_lines_and_a_cut_line_atomically_keeping_its_mode(tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_text(
        '{"id": "1", "text": "x"}\n{"id": "2", "error": {"type": "ImageError", "message": "m"}}\n'
        '\n{"id": "3", "text": "y \u2028 z"}\n{"id": "4", "te',
        encoding="utf-8",
    )
    out.chmod(0o640)
    assert ResultLog(out).done == {"1", "3"}
    assert (
        out.read_text(encoding="utf-8")
        == '{"id": "1", "text": "x"}\n{"id": "3", "text": "y \u2028 z"}\n'
    )
    assert out.stat().st_mode & 0o777 == 0o640 and sorted(os.listdir(tmp_path)) == ["out.jsonl"]
    before = out.stat().st_mtime_ns
    ResultLog(out)
    assert out.stat().st_mtime_ns == before  # nothing to drop: not rewritten


def _require_ray():
    pytest.importorskip("ray.data")


def test_on_ray_bad_lines_are_error_lines_and_a_bad_target_fails_up_front(tmp_path):
    _require_ray()
    inp, out = (
        _write(tmp_path / "in.jsonl", "{oops", '{"prompt": "a cat", "x": 1}'),
        tmp_path / "out.jsonl",
    )
    result = _enhance(inp, "--output", str(out), "--ray")  # no usable row: Ray never starts
    assert result.exit_code == EXIT_ROWS_FAILED, result.output
    assert [(row["id"], row["error"]["type"]) for row in _lines(out.read_text())] == [
        ("1", "InvalidInputError"),
        ("2", "InvalidInputError"),
    ]
    bad = _enhance(inp, "--output", str(tmp_path / "other.jsonl"), "--ray", "--target", "nosuch")
    assert bad.exit_code == 1 and "unknown target 'nosuch'" in bad.stderr
    assert not (tmp_path / "other.jsonl").exists()
    same = _enhance(inp, "--output", str(inp), "--ray")
    assert same.exit_code == 1 and "is the prompt file" in same.stderr
