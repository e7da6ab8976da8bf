"""tools.blind: the blind reading's draw, batches and score, and one reading end to end with the
real model."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tools.blind import ROOT, arms, refs
from tools.blind.cli import main
from tools.blind.draw import allocate
from tools.blind.score import kappa
from tools.blind.sources import VBENCH
from tools.blind.used import normal, used_set


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def read_jsonl(path: Path) -> list[dict]:
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def label(id_: str, faithful: bool, quality: int, problems: list[str] | None = None) -> dict:
    return {
        "id": id_,
        "faithful": faithful,
        "problems": problems or [],
        "quality": quality,
        "note": "ok",
    }


# -- score ----------------------------------------------------------------------------------------


@pytest.fixture
def labelled(tmp_path) -> Path:
    """4 counted items of sources A and B (i4 is a deduped item of both), and i5 with one reader."""
    write_jsonl(
        tmp_path / "key.jsonl",
        [
            {"id": "i1", "sources": ["A"], "prompt_id": "t2v-000", "task": "t2v", "part": 1},
            {"id": "i2", "sources": ["A"], "prompt_id": "t2v-001", "task": "t2v", "part": 1},
            {"id": "i3", "sources": ["B"], "prompt_id": "t2v-000", "task": "t2v", "part": 1},
            {"id": "i4", "sources": ["A", "B"], "prompt_id": "t2v-001", "task": "t2v", "part": 1},
            {"id": "i5", "sources": ["B"], "prompt_id": "t2v-002", "task": "t2v", "part": 1},
        ],
    )
    write_jsonl(
        tmp_path / "labels" / "part-1.r1.jsonl",
        [
            label("i1", True, 4),
            label("i2", False, 2, ["lost"]),
            label("i3", False, 1, ["added_subject"]),
            label("i4", True, 3),
            label("i5", True, 5),
        ],
    )
    write_jsonl(
        tmp_path / "labels" / "part-1.r2.jsonl",
        [
            label("i1", True, 5),
            label("i2", True, 4),
            label("i3", False, 2, ["added_subject", "incoherent"]),
            label("i4", True, 3),
        ],
    )
    return tmp_path


def test_score_arithmetic_and_agreement(labelled, capsys):
    assert main(["score", str(labelled), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    a, b = result["groups"]
    # A: i1, i2, i4; i2 flawed by one reader; qualities 4 5 2 4 3 3
    fields = ("source", "n", "flawed_any_pct", "flawed_majority_pct", "quality")
    assert tuple(a[f] for f in fields) == ("A", 3, 33.3, 0.0, 3.5)
    assert a["problems"] == {
        "added_subject": 0,
        "lost": 1,
        "changed": 0,
        "incoherent": 0,
        "form": 0,
    }
    # B: i3 (flawed by both), i4; qualities 1 2 3 3
    assert tuple(b[f] for f in fields) == ("B", 2, 50.0, 50.0, 2.25)
    assert b["problems"] == {
        "added_subject": 1,
        "lost": 0,
        "changed": 0,
        "incoherent": 1,
        "form": 0,
    }
    # faithful: r1 T F F T, r2 T T F T: po 3/4, pe .5*.75 + .5*.25 = .5, kappa .5; |dq| 1 2 1 0
    assert result["agreement"] == {
        "items": 4,
        "faithful_agree_pct": 75.0,
        "kappa": 0.5,
        "reader_pairs": 1,
        "quality_abs_diff": 1.0,
    }
    assert result["incomplete"] == [["i5", 1]]
    table = (labelled / "score.md").read_text()
    assert "| t2v | A | 3 | 33.3 | 0.0 | 3.50 | 0 | 1 | 0 | 0 | 0 |" in table
    assert "| t2v | B | 2 | 50.0 | 50.0 | 2.25 | 1 | 0 | 0 | 1 | 0 |" in table
    assert "i5 (1)" in table


def test_kappa_by_hand():
    assert kappa([(True, True), (False, False)]) == 1.0
    assert kappa([(True, False), (False, True)]) == -1.0
    assert kappa([(True, True), (True, True)]) is None  # one class only: undefined
    assert kappa([(True, True), (True, False), (False, False), (True, True)]) == pytest.approx(0.5)


def test_bad_label_row_names_file_and_line(labelled):
    with (labelled / "labels" / "part-1.r2.jsonl").open("a") as out:
        out.write(json.dumps(label("i5", True, 7)) + "\n")
        out.write(json.dumps({**label("i5", False, 1), "problems": ["ugly"]}) + "\n")
    run = subprocess.run(
        [sys.executable, "-m", "tools.blind", "score", str(labelled)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr
    lines = run.stderr.splitlines()
    assert all(line.startswith("blind: ") for line in lines)
    assert any("part-1.r2.jsonl:5: quality must be an integer 1-5" in line for line in lines)
    assert any("part-1.r2.jsonl:6: problems must be" in line for line in lines)


# -- arms, allocation, alignment ------------------------------------------------------------------


def test_arm_specs():
    assert arms.parse("light:strength=light") == arms.Arm("light", {"strength": "light"})
    assert arms.parse("t0:temperature=0,force=true,max_new_tokens=80,x=0.5,style=none").options == {
        "temperature": 0,
        "force": True,
        "max_new_tokens": 80,
        "x": 0.5,
        "style": None,
    }
    assert arms.parse("base") == arms.Arm("base", {})
    for bad in ("wan", "a b", "x:temperature", "x:seed=3"):
        with pytest.raises(Exception, match="arm"):
            arms.parse(bad)
    with pytest.raises(Exception, match="twice"):
        arms.parse_all(["a", "a:temperature=0"])


def test_allocate_is_proportional_with_a_minimum():
    import random

    shares = allocate(10, {"v": 100, "w": 300}, random.Random(0), {"v": 5})
    assert shares == {"v": 5, "w": 5}
    shares = allocate(8, {"a": 100, "b": 100, "c": 200}, random.Random(0))
    assert shares == {"a": 2, "b": 2, "c": 4}
    assert sum(allocate(3, {"a": 1, "b": 1}, random.Random(0)).values()) == 2


def test_alignment_follows_a_dropped_line():
    animals = [
        "fox",
        "heron",
        "otter",
        "badger",
        "walrus",
        "lynx",
        "bison",
        "moose",
        "ibex",
        "crane",
        "gecko",
        "llama",
        "panda",
        "koala",
        "tapir",
        "okapi",
        "zebra",
        "camel",
        "raven",
        "eagle",
    ]
    shorts = [
        f"a {a} {verb}"
        for a, verb in zip(animals, ["jumping", "sleeping", "eating", "running"] * 5)
    ]
    longs = [f"A large {s.split()[1]} is shown {s.split()[2]} under a soft sky." for s in shorts]
    found, why = refs.align(shorts, longs[:10] + longs[11:])  # line 10 lost: the rest shift by one
    assert all(i == (j if j < 10 else j + 1) for j, i in found.items())  # never a wrong pair
    assert found[3] == 3 and found[14] == 15 and found[18] == 19
    assert len(found) >= 15 and 10 not in found.values() and sum(why.values()) == 19 - len(found)


# -- draw -----------------------------------------------------------------------------------------


def test_draw_refuses_used_prompts(tmp_path, capsys):
    labelled_prompt = read_jsonl(ROOT / "tests" / "data" / "faithfulness" / "labels_blind7.jsonl")[
        0
    ]["prompt"]
    given = tmp_path / "mine.jsonl"
    write_jsonl(
        given,
        [
            {"prompt": labelled_prompt + ".", "task": "t2v"},
            {"prompt": "a violet kettle singing on a stove in a lighthouse kitchen", "task": "t2i"},
            {"prompt": "  " + labelled_prompt.upper(), "task": "t2i"},
        ],
    )
    registry = tmp_path / "used.jsonl"
    assert (
        main(
            [
                "draw",
                "--out",
                str(tmp_path / "run"),
                "--prompts",
                str(given),
                "--registry",
                str(registry),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"blind: 2 prompt(s) of {given} refused:"
    assert err[1] == f"blind: {given}:1: used prompt: {labelled_prompt}."
    assert err[2].startswith(f"blind: {given}:3: used prompt: ")
    assert not (tmp_path / "run" / "prompts.jsonl").exists() and not registry.exists()


def test_draw_is_fresh_seeded_and_recorded(tmp_path, shared_data, capsys):
    used = used_set(shared_data)
    assert normal("A person is sharpening knives") in used  # a prompt_ref of labels_blind.jsonl
    assert normal("a whale") in used  # a tuning input
    registry = tmp_path / "used.jsonl"
    args = [
        "--seed",
        "3",
        "--n-t2v",
        "4",
        "--n-t2i",
        "6",
        "--data",
        str(shared_data),
        "--registry",
        str(registry),
    ]
    assert main(["draw", "--out", str(tmp_path / "one"), *args]) == 0
    rows = read_jsonl(tmp_path / "one" / "prompts.jsonl")
    assert [r["task"] for r in rows] == ["t2v"] * 4 + ["t2i"] * 6
    assert not {normal(r["prompt"]) for r in rows} & used
    assert sum(r["source"] == VBENCH for r in rows) >= 2
    assert [r["prompt"] for r in read_jsonl(registry)] == [r["prompt"] for r in rows]
    # the same seed with a fresh registry draws the same; with this registry, other prompts
    assert (
        main(["draw", "--out", str(tmp_path / "same"), *args[:-1], str(tmp_path / "other.jsonl")])
        == 0
    )
    assert read_jsonl(tmp_path / "same" / "prompts.jsonl") == rows
    assert main(["draw", "--out", str(tmp_path / "two"), *args]) == 0
    again = read_jsonl(tmp_path / "two" / "prompts.jsonl")
    assert not {normal(r["prompt"]) for r in again} & {normal(r["prompt"]) for r in rows}
    # a drawn prompt is now used
    write_jsonl(tmp_path / "mine.jsonl", [{"prompt": rows[0]["prompt"], "task": "t2v"}])
    capsys.readouterr()
    assert (
        main(
            [
                "draw",
                "--out",
                str(tmp_path / "three"),
                "--prompts",
                str(tmp_path / "mine.jsonl"),
                "--data",
                str(shared_data),
                "--registry",
                str(registry),
            ]
        )
        == 2
    )
    assert "used prompt" in capsys.readouterr().err


# -- batches --------------------------------------------------------------------------------------


def vbench_line_with_refs(data: Path) -> tuple[int, str, dict[str, str]]:
    line, texts = next(
        (n, t) for n, t in sorted(refs.aligned(data).items()) if n > 200 and len(t) == 2
    )
    short = (data / "prompts" / VBENCH).read_text().splitlines()[line - 1]
    return line, short, texts


def test_batches_blind_dedupe_and_opaque_ids(tmp_path, shared_data, capsys):
    line, short, texts = vbench_line_with_refs(shared_data)
    write_jsonl(
        tmp_path / "prompts.jsonl",
        [
            {"id": "t2v-000", "task": "t2v", "source": VBENCH, "line": line, "prompt": short},
            {
                "id": "t2i-000",
                "task": "t2i",
                "source": "geneval_prompts.txt",
                "line": 9,
                "prompt": "a blue kettle",
            },
        ],
    )
    write_jsonl(
        tmp_path / "outputs" / "armalpha.jsonl",
        [
            {"id": "t2v-000", "arm": "armalpha", "task": "t2v", "text": "Alpha video text."},
            {
                "id": "t2i-000",
                "arm": "armalpha",
                "task": "t2i",
                "text": "A blue kettle on a stove.",
            },
        ],
    )
    write_jsonl(
        tmp_path / "outputs" / "armbeta.jsonl",
        [
            {
                "id": "t2v-000",
                "arm": "armbeta",
                "task": "t2v",
                "text": texts["gpt4o"],
            },  # same as a reference
            {
                "id": "t2i-000",
                "arm": "armbeta",
                "task": "t2i",
                "text": "A blue kettle on a stove. ",
            },
        ],
    )  # same as alpha
    assert main(["batches", str(tmp_path), "--parts", "2", "--data", str(shared_data)]) == 0
    key = read_jsonl(tmp_path / "key.jsonl")
    assert sorted(sorted(k["sources"]) for k in key) == [
        ["armalpha"],
        ["armalpha", "armbeta"],
        ["armbeta", "gpt4o"],
        ["wan"],
    ]
    shown = [r for k in (1, 2) for r in read_jsonl(tmp_path / "batches" / f"part-{k}.jsonl")]
    assert len(shown) == 4 and {r["id"] for r in shown} == {k["id"] for k in key}
    for row in shown:
        assert set(row) == {"id", "task", "generator", "short", "enhanced"}
        assert re.fullmatch(r"x[0-9a-f]{8}", row["id"])
    assert {r["generator"] for r in shown} == {"text-to-video", "text-to-image"}
    for path in (tmp_path / "batches").iterdir():
        text = path.read_text()
        assert not re.search(
            r"armalpha|armbeta|gpt4o|t2v-000|t2i-000|\bwan\b",
            text.replace(texts["wan"], "").replace(json.dumps(texts["wan"])[1:-1], ""),
        ), path.name
    assert "labels/part-K.<reader>.jsonl" in (tmp_path / "batches" / "GUIDE.md").read_text()
    # the same seed gives the same ids; labels present: refused unless forced
    (tmp_path / "labels" / "part-1.r1.jsonl").write_text("")
    capsys.readouterr()
    assert main(["batches", str(tmp_path), "--data", str(shared_data)]) == 2
    assert "has labels already" in capsys.readouterr().err
    before = sorted(k["id"] for k in key)
    assert (
        main(["batches", str(tmp_path), "--parts", "2", "--data", str(shared_data), "--force"]) == 0
    )
    assert sorted(k["id"] for k in read_jsonl(tmp_path / "key.jsonl")) == before


# -- end to end, real model -----------------------------------------------------------------------


@pytest.mark.slow
def test_reading_end_to_end(tmp_path, shared_data, model_dir, capsys):
    run, registry = tmp_path / "run", tmp_path / "used.jsonl"
    assert (
        main(
            [
                "draw",
                "--out",
                str(run),
                "--seed",
                "5",
                "--n-t2v",
                "2",
                "--n-t2i",
                "2",
                "--min-vbench",
                "1",
                "--data",
                str(shared_data),
                "--registry",
                str(registry),
            ]
        )
        == 0
    )
    prompts = read_jsonl(run / "prompts.jsonl")
    assert [p["source"] for p in prompts[:2]] == [VBENCH, VBENCH] and len(prompts) == 4
    assert main(["enhance", str(run), "--arm", "base"]) == 0
    assert "base: 4 outputs, median latency" in capsys.readouterr().out
    outputs = read_jsonl(run / "outputs" / "base.jsonl")
    assert [o["id"] for o in outputs] == [p["id"] for p in prompts]
    assert all(
        o["text"] and o["latency_s"] > 0 and o["target"] in ("video", "image") for o in outputs
    )
    assert main(["enhance", str(run), "--arm", "base"]) == 0  # resumes: nothing to do
    assert len(read_jsonl(run / "outputs" / "base.jsonl")) == 4
    assert main(["batches", str(run), "--data", str(shared_data)]) == 0
    key = read_jsonl(run / "key.jsonl")
    assert (
        sorted(s for k in key for s in k["sources"]) == ["base"] * 4 + ["gpt4o"] * 2 + ["wan"] * 2
    )
    # r1 accepts all (quality 4); r2 rejects the Wan references (changed, 2) and rates the rest 5
    r1 = [label(k["id"], True, 4) for k in key]
    r2 = [
        label(k["id"], False, 2, ["changed"]) if "wan" in k["sources"] else label(k["id"], True, 5)
        for k in key
    ]
    write_jsonl(run / "labels" / "part-1.r1.jsonl", r1)
    write_jsonl(run / "labels" / "part-1.r2.jsonl", r2)
    capsys.readouterr()
    assert main(["score", str(run)]) == 0
    table = capsys.readouterr().out
    assert table == (run / "score.md").read_text()
    for row in (
        "| t2v | base | 2 | 0.0 | 0.0 | 4.50 | 0 | 0 | 0 | 0 | 0 |",
        "| t2v | gpt4o | 2 | 0.0 | 0.0 | 4.50 | 0 | 0 | 0 | 0 | 0 |",
        "| t2v | wan | 2 | 100.0 | 0.0 | 3.00 | 0 | 0 | 2 | 0 | 0 |",
        "| t2i | base | 2 | 0.0 | 0.0 | 4.50 | 0 | 0 | 0 | 0 | 0 |",
    ):
        assert row in table
    # agreement 6 of 8; r1 all faithful: pe = pb = .75 = po, kappa 0; |dq| (4*1 + 2*1 + 2*2) / 8
    assert (
        "Agreement on faithful: 75.0% of items; Cohen's kappa 0.0 (mean over 1 reader pair(s)); "
        "mean |quality difference| 1.25." in table
    )
