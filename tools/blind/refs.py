"""Reference enhancements of vbench_all_dimension.txt, aligned line by line with confidence.

Two files hold other systems' enhancements of the VBench prompts:
vbench_all_dimension_gpt4o_longer.txt (GPT-4o, source name "gpt4o") and
vbench_all_dimension_wan_extended.txt (Wan 2.1's prompt extender, "wan"). They are meant to be
line-aligned with the short prompts, but ``wc -l`` counts 945 lines in the GPT-4o file against 946:
that file only lacks a final newline. The alignment is checked rather than trusted:

- every reference line is matched against the short prompts within ``SPAN`` lines of it, by how
  many of the short prompt's content words (their first four letters) it contains; its best
  offset is the one that matches most (ties go to the smaller shift);
- a reference line is aligned when, in the ``WINDOW`` lines around it, at least ``AGREE`` of the
  lines have the same best offset (so a shift anywhere shows as a run of another offset, and
  paraphrases that match a neighbour a little better do not move a line on their own);
- two reference lines aligned to one short prompt are both dropped, and so are references that
  are not in Latin script (some Wan lines are in Chinese: useless to an English reader).

``aligned(data)`` maps a 1-based line of vbench_all_dimension.txt to {"gpt4o": text, "wan": text}
(either may be missing); ``report(data)`` says how many lines of each file aligned and why the
others did not.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

from .sources import VBENCH, lines_of

FILES = {
    "gpt4o": "vbench_all_dimension_gpt4o_longer.txt",
    "wan": "vbench_all_dimension_wan_extended.txt",
}
SPAN = 3
WINDOW = 5
AGREE = 0.6
STOP = frozenset("a an the of in on at with and is are to it its by from as or".split())


def stems(text: str) -> frozenset[str]:
    """Content words of ``text``, cut to their first four letters (marching ~ marches)."""
    return frozenset(w[:4] for w in re.findall(r"[a-z]+", text.lower()) if w not in STOP)


def coverage(short: frozenset[str], long: frozenset[str]) -> float:
    """The share of the short prompt's content words found in the long text."""
    return len(short & long) / len(short) if short else 0.0


def best_offset(j: int, shorts: list[frozenset[str]], long: frozenset[str]) -> int | None:
    """The shift d (|d| <= SPAN) whose short prompt j + d the reference line j covers best."""
    scored = [
        (coverage(shorts[j + d], long), -abs(d), d)
        for d in range(-SPAN, SPAN + 1)
        if 0 <= j + d < len(shorts)
    ]
    best = max(scored, default=None)
    return None if best is None or best[0] == 0 else best[2]


def latin(text: str) -> bool:
    """Mostly ASCII (English), not e.g. Chinese."""
    return bool(text) and sum(ord(ch) > 0x2FF for ch in text) <= 0.05 * len(text)


def align(shorts: list[str], longs: list[str]) -> tuple[dict[int, int], Counter]:
    """Map 0-based reference lines to 0-based short lines; and the count of each drop reason."""
    short_stems = [stems(s) for s in shorts]
    offsets = [best_offset(j, short_stems, stems(text)) for j, text in enumerate(longs)]
    found: dict[int, int] = {}
    why: Counter = Counter()
    for j, text in enumerate(longs):
        window = [d for d in offsets[max(0, j - WINDOW) : j + WINDOW + 1] if d is not None]
        common = Counter(window).most_common(1)
        if not common or common[0][1] < AGREE * len(offsets[max(0, j - WINDOW) : j + WINDOW + 1]):
            why["no agreed offset"] += 1
        elif not 0 <= j + common[0][0] < len(shorts):
            why["past the end"] += 1
        elif not latin(text):
            why["not Latin script"] += 1
        else:
            found[j] = j + common[0][0]
    taken = Counter(found.values())
    for j in [j for j, i in found.items() if taken[i] > 1]:
        del found[j]
        why["two lines on one prompt"] += 1
    return found, why


@lru_cache(maxsize=4)
def _aligned(data: Path) -> tuple[dict[int, dict[str, str]], dict[str, dict]]:
    shorts = lines_of(data / "prompts" / VBENCH)
    by_line: dict[int, dict[str, str]] = {}
    summary: dict[str, dict] = {}
    for name, file in FILES.items():
        path = data / "prompts" / file
        if not path.is_file():
            summary[name] = {"file": file, "missing": True}
            continue
        longs = lines_of(path)
        found, why = align(shorts, longs)
        for j, i in found.items():
            by_line.setdefault(i + 1, {})[name] = longs[j].strip()
        shifted = sum(1 for j, i in found.items() if i != j)
        summary[name] = {
            "file": file,
            "lines": len(longs),
            "short_lines": len(shorts),
            "aligned": len(found),
            "shifted": shifted,
            "dropped": dict(why),
        }
    return by_line, summary


def aligned(data: Path) -> dict[int, dict[str, str]]:
    """1-based line of vbench_all_dimension.txt -> {reference name: text} for the aligned
    references."""
    return _aligned(Path(data).resolve())[0]


def report(data: Path) -> dict[str, dict]:
    """Per reference: its line count, how many lines aligned (and at a shift), and the drops by
    reason."""
    return _aligned(Path(data).resolve())[1]
