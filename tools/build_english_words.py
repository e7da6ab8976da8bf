"""Write templates/languages/english.txt: the English words promptx's language identifier knows.

The words of the public English prompt sets under ../shared/data/prompts (Parti, GenEval,
T2I-CompBench, VBench and their GPT-4o/Wan enhancements), kept when they occur at least twice
there, plus every word of promptx's own phrase sets. A vocabulary, not text: no prompt is
copied. Run from the repository root: ``python tools/build_english_words.py``.
"""

from __future__ import annotations

import collections
import csv
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROMPTS = ROOT.parent / "shared" / "data" / "prompts"
OUT = ROOT / "templates" / "languages" / "english.txt"
WORD = re.compile(r"[a-z]+")
MIN_COUNT = 2
TEXT_SETS = (
    "geneval_prompts.txt",
    "vbench_all_dimension.txt",
    "vbench_all_category.txt",
    "vbench2_full_text.txt",
    "vbench_all_dimension_gpt4o_longer.txt",
    "vbench_all_dimension_wan_extended.txt",
)


def _prompt_texts():
    for name in TEXT_SETS:
        yield (PROMPTS / name).read_text(encoding="utf-8")
    for path in sorted((PROMPTS / "t2i_compbench").glob("*.txt")):
        yield path.read_text(encoding="utf-8")
    with (PROMPTS / "partiprompts.tsv").open(encoding="utf-8") as handle:
        yield "\n".join(row["Prompt"] for row in csv.DictReader(handle, delimiter="\t"))


def main() -> None:
    counts = collections.Counter(w for text in _prompt_texts() for w in WORD.findall(text.lower()))
    words = {w for w, n in counts.items() if n >= MIN_COUNT and (len(w) > 1 or w in ("a", "i"))}
    for path in (ROOT / "templates" / "phrases").rglob("*.toml"):
        words.update(
            w for w in WORD.findall(path.read_text(encoding="utf-8").lower()) if len(w) > 1
        )
    header = (
        "# English words known to promptx's language identifier; "
        "built by tools/build_english_words.py\n"
    )
    OUT.write_text(header + "\n".join(sorted(words)) + "\n", encoding="utf-8")
    print(f"{len(words)} words -> {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
