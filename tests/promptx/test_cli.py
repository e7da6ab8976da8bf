"""The command line through click's CliRunner: output formats and one-line error exits."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from promptx.cli.main import main


@pytest.fixture
def runner():
    return CliRunner()


def test_templates_list_and_show(runner):
    listed = runner.invoke(main, ["templates", "list"])
    assert listed.exit_code == 0 and "wan-t2v" in listed.output and "sdxl" in listed.output
    shown = runner.invoke(main, ["templates", "show", "flux"])
    assert shown.exit_code == 0 and json.loads(shown.output)["name"] == "flux1"
    as_json = json.loads(runner.invoke(main, ["templates", "list", "--json"]).output)
    assert {row["name"] for row in as_json} >= {
        "image",
        "video",
        "image-to-video",
        "image-to-image",
    }


def test_unknown_target_is_one_line_error(runner):
    result = runner.invoke(main, ["templates", "show", "nope"])
    assert result.exit_code == 1
    assert result.output.startswith("promptx: error:") and "video" in result.output
    assert "Traceback" not in result.output


def test_enhance_errors_exit_nonzero_without_traceback(runner, tmp_path):
    cases = [
        (["enhance", "   "], "empty"),
        (["enhance", "a cat", "--target", "nope"], "unknown"),
        (
            ["enhance", "a cat", "--target", "i2i", "--image", str(tmp_path / "none.png")],
            "not found",
        ),
        (["enhance", "--file", str(tmp_path / "missing.txt")], "cannot read"),
        (["enhance", "a cat", "--model", str(tmp_path / "nowhere")], "not found"),
        (["enhance", "a cat", "--style", "no-such-style"], "style"),
    ]
    for args, needle in cases:
        result = runner.invoke(main, args)
        assert result.exit_code == 1, (args, result.output)
        assert needle in result.output.lower() and "Traceback" not in result.output, (
            args,
            result.output,
        )


def test_usage_errors_exit_2(runner):
    result = runner.invoke(main, ["enhance", "a cat", "--seed", "-3"])
    assert result.exit_code == 2


def test_debug_flag_shows_the_exception(runner):
    result = runner.invoke(main, ["--debug", "templates", "show", "nope"])
    assert result.exit_code == 1 and result.exception is not None


def test_an_unexpected_failure_is_one_line_too(runner, monkeypatch):
    import promptx.profiles.registry as registry

    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(registry.TemplateRegistry, "profiles", broken)
    result = runner.invoke(main, ["templates", "list"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.startswith("promptx: internal error: RuntimeError: disk on fire")
    debug = runner.invoke(main, ["--debug", "templates", "list"])
    assert isinstance(debug.exception, RuntimeError)


def test_models_lists_the_embedded_model(runner, model_dir):
    result = runner.invoke(main, ["models", "--json"])
    rows = json.loads(result.output)
    assert result.exit_code == 0 and rows[0]["default"] and rows[0]["cached"]


@pytest.mark.slow
def test_enhance_json_and_file_batch(runner, model_dir, tmp_path):
    result = runner.invoke(
        main,
        [
            "enhance",
            "a cat on a skateboard",
            "--target",
            "video",
            "--json",
            "--seed",
            "1",
            "--max-new-tokens",
            "64",
        ],
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output[result.output.index("{") :])
    assert payload["target"] == "video" and payload["original_prompt"] == "a cat on a skateboard"
    assert payload["text"].strip()
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("a red car\n\na blue boat\n一只猫在滑板上\n", encoding="utf-8")
    batch = runner.invoke(
        main,
        [
            "enhance",
            "--file",
            str(prompts),
            "--target",
            "sdxl",
            "--seed",
            "2",
            "--max-new-tokens",
            "48",
        ],
    )
    assert batch.exit_code == 0, batch.output
    lines = [json.loads(line) for line in batch.output.splitlines() if line.startswith("{")]
    assert [row["original_prompt"] for row in lines] == [
        "a red car",
        "a blue boat",
        "一只猫在滑板上",
    ]
    assert (
        lines[2]["skipped"] and lines[2]["text"] == "一只猫在滑板上"
    )  # English-only model: as it was
    assert " enhanced, 1 passed through as they were, " in batch.stderr
    single = runner.invoke(main, ["enhance", "一只猫在滑板上", "--target", "wan"])
    assert single.exit_code == 0 and single.stdout.strip() == "一只猫在滑板上"
    assert (
        "note: returned the prompt unchanged (the model enhances English prompts only"
        in single.stderr
    )


@pytest.mark.slow
def test_bad_drafter_is_a_one_line_model_error(runner, model_dir, tmp_path):
    result = runner.invoke(main, ["enhance", "a cat", "--drafter", str(tmp_path / "no-drafter")])
    assert result.exit_code == 1 and "drafter" in result.output and "Traceback" not in result.output


@pytest.mark.slow
def test_enhance_from_stdin_and_stream(runner, model_dir):
    piped = runner.invoke(
        main,
        ["enhance", "-", "--target", "image", "--seed", "5", "--max-new-tokens", "48"],
        input="a lighthouse at night\n",
    )
    assert piped.exit_code == 0 and piped.output.strip()
    streamed = runner.invoke(
        main,
        [
            "enhance",
            "a lighthouse at night",
            "--stream",
            "--seed",
            "5",
            "--max-new-tokens",
            "32",
            "--no-speculative",
        ],
    )
    assert streamed.exit_code == 0 and streamed.output.strip()


def test_the_process_entry_point_flushes_output_and_keeps_exit_codes(tmp_path):
    """``python -m promptx`` (like the console script) ends without interpreter teardown."""
    import subprocess
    import sys

    def promptx(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "promptx", *args], capture_output=True, text=True, timeout=120
        )

    listed = promptx("templates", "list", "--json")
    assert listed.returncode == 0
    assert {row["name"] for row in json.loads(listed.stdout)} >= {"video", "image", "wan-t2v"}
    failed = promptx("enhance", "a cat", "--target", "nope")
    assert failed.returncode == 1 and failed.stderr.startswith("promptx: error: unknown target")
    assert promptx("templates", "show").returncode == 2  # click's usage error
    assert "promptx, version" in promptx("--version").stdout


def test_exit_status_follows_sys_exit():
    from promptx.cli.main import _exit_status

    assert (_exit_status(None), _exit_status(0), _exit_status(3)) == (0, 0, 3)
    assert _exit_status("message") == 1


def test_draft_generate_data_decodes_in_the_precision_asked(runner, model_dir, tmp_path):
    prompts = tmp_path / "prompts"
    (prompts / "t2i_compbench").mkdir(parents=True)
    (prompts / "partiprompts.tsv").write_text(
        "Prompt\tCategory\na red bicycle\tX\na green kite\tX\n"
    )
    out = tmp_path / "data"
    args = [
        "draft",
        "generate-data",
        "--out",
        str(out),
        "--prompts-dir",
        str(prompts),
        "--tasks",
        "t2i",
        "--limit",
        "2",
        "--max-new-tokens",
        "4",
        "--greedy-fraction",
        "1",
        "--dtype",
        "bfloat16",
        "--quiet",
    ]
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output[result.output.index("{") :])
    assert summary["generated"] == 2 and summary["new_tokens"] == 8
    assert json.loads((out / "dataset.json").read_text())["dtype"] == "bfloat16"
    rerun = runner.invoke(main, args)
    assert (
        rerun.exit_code == 0 and json.loads(rerun.output[rerun.output.index("{") :])["skipped"] == 2
    )


@pytest.mark.slow
def test_a_revised_stream_ends_stdout_with_the_final_text(runner, model_dir):
    # 10 tokens leave no whole sentence: the streamed attempt is rejected, the prompt comes back
    result = runner.invoke(
        main,
        [
            "enhance",
            "a fox running through snow",
            "--strength",
            "full",
            "--stream",
            "--seed",
            "2",
            "--max-new-tokens",
            "10",
            "--no-speculative",
        ],
    )
    assert result.exit_code == 0, result.output
    assert (
        result.stdout.strip() == "a fox running through snow"
    )  # not a tty: the words went to stderr
    assert "returned the original prompt" in result.stderr


def test_stdin_that_is_not_utf8_is_a_one_line_error(runner):
    result = runner.invoke(main, ["enhance", "-"], input=b"un caf\xe9 noir")
    assert (
        result.exit_code == 1 and "not UTF-8" in result.stderr and "Traceback" not in result.output
    )
    bom = runner.invoke(
        main, ["enhance", "-", "--json"], input="\ufeffa cat on a skateboard".encode()
    )
    assert (
        bom.exit_code == 0 and json.loads(bom.stdout)["original_prompt"] == "a cat on a skateboard"
    )
