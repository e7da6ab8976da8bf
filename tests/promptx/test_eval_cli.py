"""``promptx eval``: end to end with the real model, a reference file, and bad files."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from promptx.cli.main import main


@pytest.fixture
def prompts(tmp_path):
    path = tmp_path / "prompts.txt"
    path.write_text(
        "a cat on a skateboard\na red car by the sea\nrobot\n"
        "a lighthouse in a storm\n一只猫在滑板上\n",
        encoding="utf-8",
    )
    return path


@pytest.mark.slow
def test_eval_end_to_end_with_the_real_model(prompts, tmp_path, model_dir):
    out = tmp_path / "report"
    result = CliRunner().invoke(
        main, ["eval", str(prompts), "--target", "image", "--json", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output[result.output.index("{") :])
    overall = next(s for s in report["summary"] if s["task"] == "all")
    assert (
        overall["n"] == 5 and 0.0 <= overall["pass_rate"] <= 0.8 and overall["skipped_rate"] == 0.2
    )
    assert len(report["rows"]) == 5 and all(r["source"] == "promptx" for r in report["rows"])
    for row in report["rows"]:
        assert row["passed"] == (not row["kinds"] and not row["fallback"] and not row["skipped"])
    chinese = report["rows"][
        -1
    ]  # the embedded model reads English only: passed through, not a pass
    assert chinese["skipped"] and not chinese["passed"] and chinese["text"] == "一只猫在滑板上"
    assert chinese["kinds"] == [] and chinese["reasons"] == []  # no finding counted against it
    assert (out / "results.jsonl").is_file() and (out / "summary.json").is_file()


def test_reference_only_table(tmp_path):
    prompts = tmp_path / "p.txt"
    prompts.write_text("a cat on a skateboard\na dog\nthree red apples\n")
    reference = tmp_path / "ref.txt"
    lines = [
        "A ginger cat rides a skateboard down a sunny street, its tail up and paws steady on the "
        "deck, while the low camera tracks beside it past shop windows in warm late afternoon "
        "light.",
        "A dog and a man walk on the beach while you watch them from the dunes at sunset, "
        "the waves rolling in slowly under a wide orange sky and soft golden light over the sand.",
        json.dumps(
            {
                "text": "A single red apple sits on a wooden table in soft window light, a quiet "
                "still life with deep shadows, a linen cloth and a plain grey wall behind it, "
                "close up."
            }
        ),
    ]
    reference.write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(
        main,
        [
            "eval",
            str(prompts),
            "--reference",
            str(reference),
            "--no-promptx",
            "--target",
            "image",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output[result.output.index("{") :])["rows"]
    assert [r["passed"] for r in rows] == [True, False, False]
    assert "form" in rows[1]["kinds"] and "added_subject" in rows[1]["kinds"]
    assert "contradiction" in rows[2]["kinds"]
    markdown = CliRunner().invoke(
        main, ["eval", str(prompts), "--reference", str(reference), "--no-promptx"]
    )
    assert markdown.exit_code == 0 and "| reference | all | all | 3 |" in markdown.output


def test_bad_files_are_one_line_errors(tmp_path):
    prompts = tmp_path / "p.txt"
    prompts.write_text("a cat\na dog\n")
    short = tmp_path / "short.txt"
    short.write_text("one line only\n")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"text": "fine"}\n{"text": \n')
    bad_prompts = tmp_path / "bad.jsonl"
    bad_prompts.write_text('{"prompt": "a cat"}\n{not json}\n')
    for args, expected in [
        (["eval", str(prompts), "--reference", str(short), "--no-promptx"], f"{short}:2"),
        (["eval", str(prompts), "--reference", str(broken), "--no-promptx"], f"{broken}:2"),
        (["eval", str(bad_prompts), "--reference", str(short), "--no-promptx"], f"{bad_prompts}:2"),
        (["eval", str(prompts), "--no-promptx"], "--reference"),
    ]:
        result = CliRunner().invoke(main, args)
        assert result.exit_code in (1, 2), result.output
        assert expected in result.output and "Traceback" not in result.output
