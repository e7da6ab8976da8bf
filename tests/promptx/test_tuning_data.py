"""The tuning pairs in data/tuning parse, fit their profiles and pass the assessment, and the
held-out split shares no input with training (tools/check_pairs.py does the checking)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data" / "tuning"


def checker():
    spec = importlib.util.spec_from_file_location("check_pairs", ROOT / "tools" / "check_pairs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("check_pairs", module)
    spec.loader.exec_module(module)
    return module


def test_every_tuning_pair_passes_the_checker(capsys):
    code = checker().main([str(DATA), "--summary"])
    report = capsys.readouterr().out
    assert code == 0, report
    total = int(report.strip().splitlines()[-1].split("\t")[1])
    assert total >= 3000, report


def test_the_checker_names_each_problem_with_its_line(tmp_path, capsys):
    good = {
        "id": "x-1",
        "target": "sdxl",
        "input": "a red kite",
        "source": "team",
        "author": "test",
        "output": "red kite, diamond shape, long ribbon tail, windy hill, blue sky, "
        "bright daylight, low angle, photograph, sharp focus, vivid colours",
    }
    bad = dict(
        good,
        id="x-2",
        output="red kite, a barking dog, windy hill, blue sky, bright daylight, "
        "low angle, photograph, sharp focus, vivid colours",
    )
    folder = tmp_path / "train"
    folder.mkdir()
    (folder / "x.jsonl").write_text(
        json.dumps(good)
        + "\n"
        + json.dumps(bad)
        + "\n{oops\n"
        + json.dumps(dict(good, target="nope"))
        + "\n"
    )
    assert checker().main([str(tmp_path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert any(":2: x-2: assessment:" in line and "dog" in line for line in lines), lines
    assert any(":3:" in line for line in lines), lines
    assert any(":4: x-1:" in line and "nope" in line for line in lines), (
        lines
    )  # unknown target, reused id
    assert not any(":1:" in line for line in lines), lines


def test_held_out_inputs_come_from_their_own_sources():
    sources = {
        "t2va": {"vbench2"},
        "t2vb": {"vbench2"},
        "t2ia": {"t2i-compbench"},
        "t2ib": {"t2i-compbench"},
        "tags": {"t2i-compbench"},
        "i2v": {"team"},
        "i2i": {"team"},
    }
    for file in sorted((DATA / "heldout").glob("*.jsonl")):
        rows = [
            json.loads(line)
            for line in file.read_text(encoding="utf-8").splitlines()
            if line.strip()
        ]
        assert rows, file
        assert {r["source"] for r in rows} <= sources[file.stem], file
        if file.stem in ("t2ia", "t2ib", "tags"):
            assert all("_val.txt" in r["ref"] for r in rows), file
        if file.stem in ("i2v", "i2i"):  # the real images, never trained on
            assert all(r["ref"].startswith("images/") for r in rows), file
