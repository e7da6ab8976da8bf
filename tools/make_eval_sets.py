"""Write the benchmark prompt files of the faithfulness report into data/eval/.

Derived from the public sets in ../shared/data/prompts (their licenses are in
../shared/data/README.md), in ``promptx eval``'s JSONL prompt-file format:

- geneval_50.jsonl: the first 50 GenEval prompts (target image);
- parti_50.jsonl: every 32nd PartiPrompts prompt, lines 2, 34, 66, ... (target
  image), so that all categories are in it, not only the first one's single words;
- vbench_i2v_50.jsonl: the first 50 VBench-I2V entries (target image-to-video),
  the image described by its file name, which VBench-I2V writes as a caption.

The image-to-image set (i2i_edits.jsonl) is written by the team, not derived.
The first 200 lines of vbench_all_dimension.txt are read as they are.

    python tools/make_eval_sets.py
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data" / "prompts"
OUT = ROOT / "data" / "eval"
PARTI_STEP = 32


def parti_lines() -> list[int]:
    """1-based line numbers of partiprompts.tsv in the benchmark (line 1 is the header)."""
    return list(range(2, 2 + 50 * PARTI_STEP, PARTI_STEP))


def _write(name: str, rows: list[dict]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    (OUT / name).write_text(text, encoding="utf-8")
    print(f"{OUT / name}: {len(rows)} prompts")


def main() -> None:
    geneval = [line.strip() for line in (SHARED / "geneval_prompts.txt").read_text().splitlines() if line.strip()]
    _write("geneval_50.jsonl", [{"prompt": p, "task": "image"} for p in geneval[:50]])
    parti = (SHARED / "partiprompts.tsv").read_text(encoding="utf-8").splitlines()
    _write("parti_50.jsonl", [{"prompt": parti[n - 1].split("\t")[0].strip(), "task": "image"}
                              for n in parti_lines()])
    entries = json.loads((SHARED / "vbench_i2v_full_info.json").read_text())[:50]
    _write("vbench_i2v_50.jsonl", [{"prompt": e["prompt_en"], "task": "image-to-video",
                                    "caption": Path(e["image_name"]).stem} for e in entries])


if __name__ == "__main__":
    main()
