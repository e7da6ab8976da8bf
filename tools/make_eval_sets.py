"""Write the benchmark prompt files of the faithfulness report into data/eval/.

Derived from the public sets in ../shared/data/prompts (their licenses are in
../shared/data/README.md), in ``promptx eval``'s JSONL prompt-file format:

- geneval_50.jsonl: the first 50 GenEval prompts (target image);
- parti_50.jsonl: every 32nd PartiPrompts prompt, lines 2, 34, 66, ... (target
  image), so that all categories are in it, not only the first one's single words;
- vbench_i2v_50.jsonl: the first 50 VBench-I2V entries (target image-to-video),
  the image described by its file name, which VBench-I2V writes as a caption.

The image-to-image sets (i2i_edits.jsonl, i2i_edits_2.jsonl) are written by the
team, not derived. The first 200 lines of vbench_all_dimension.txt are read as
they are.

It also writes the speed suite shipped in the package,
promptx/suites/enhance-400.jsonl (``promptx bench --suite enhance-400``), 100
prompts per task, images given by their captions (the package carries no
images): text-to-video, every 9th line of vbench_all_dimension.txt from the
first; image-to-video, the first 100 VBench-I2V entries; text-to-image, the
GenEval and PartiPrompts sets above; image-to-image, the team's 100 edits.

    python tools/make_eval_sets.py
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data" / "prompts"
OUT = ROOT / "data" / "eval"
SUITE = ROOT / "promptx" / "suites" / "enhance-400.jsonl"
PARTI_STEP = 32


def parti_lines() -> list[int]:
    """1-based line numbers of partiprompts.tsv in the benchmark (line 1 is the header)."""
    return list(range(2, 2 + 50 * PARTI_STEP, PARTI_STEP))


def _write(name: str, rows: list[dict], folder: Path = OUT) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    (folder / name).write_text(text, encoding="utf-8")
    print(f"{folder / name}: {len(rows)} prompts")


def _i2v(count: int) -> list[dict]:
    entries = json.loads((SHARED / "vbench_i2v_full_info.json").read_text())[:count]
    return [
        {"prompt": e["prompt_en"], "task": "image-to-video", "caption": Path(e["image_name"]).stem}
        for e in entries
    ]


def _suite(geneval: list[dict], parti: list[dict]) -> list[dict]:
    """enhance-400: 100 prompts per task, each row with its source, images as captions only; the
    tasks take turns line by line, so that the first N lines (``--num-prompts N``) cover all
    four."""
    vbench = [
        line.strip() for line in (SHARED / "vbench_all_dimension.txt").read_text().splitlines()
    ][::9][:100]
    edits = [
        json.loads(line)
        for name in ("i2i_edits.jsonl", "i2i_edits_2.jsonl")
        for line in (OUT / name).read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    tasks = [
        [{"prompt": p, "task": "video", "source": "VBench"} for p in vbench],
        [{**r, "source": "VBench-I2V"} for r in _i2v(100)],
        [{**r, "source": "GenEval"} for r in geneval]
        + [{**r, "source": "PartiPrompts"} for r in parti],
        [
            {
                "prompt": e["prompt"],
                "task": "image-to-image",
                "caption": e["caption"],
                "source": "promptx team",
            }
            for e in edits
        ],
    ]
    return [{"id": f"{rows[i]['task']}-{i:03d}", **rows[i]} for i in range(100) for rows in tasks]


def main() -> None:
    lines = [
        line.strip()
        for line in (SHARED / "geneval_prompts.txt").read_text().splitlines()
        if line.strip()
    ]
    geneval = [{"prompt": p, "task": "image"} for p in lines[:50]]
    _write("geneval_50.jsonl", geneval)
    tsv = (SHARED / "partiprompts.tsv").read_text(encoding="utf-8").splitlines()
    parti = [{"prompt": tsv[n - 1].split("\t")[0].strip(), "task": "image"} for n in parti_lines()]
    _write("parti_50.jsonl", parti)
    _write("vbench_i2v_50.jsonl", _i2v(50))
    _write(SUITE.name, _suite(geneval, parti), SUITE.parent)


if __name__ == "__main__":
    main()
