"""Numbers of the prompt that the output must keep: "42", "route 66", "U.S. 101", "1969".

A number is kept by the same digits anywhere in the output ("1,000" and "1000"
alike) or, from 0 to 99 and for 100 and 1000, by English words for it ("3 cats"
-> "three cats", "2 swans" -> "twin swans", "70 years" -> "seventy years", "100
balloons" -> "a hundred balloons").
Counts that change ("3 cats" -> "five cats") are ``attributes``' findings too.
Not here: quoted text (``assess``), counts written as words in the prompt.
"""

from __future__ import annotations

import re

from .assessment import Finding
from .words import NUMBERS

__all__ = ["number_findings"]

# a number with its own decimal point, thousands separators or clock colon: "3.5", "1,000", "12:30"
_NUMBER = re.compile(r"(?<![\w.,:])\d+(?:[.,:]\d+)*(?![\w])")
_TEENS = "thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_WORDS_OF: dict[int, set[str]] = {100: {"hundred"}, 1000: {"thousand"}, 0: {"zero"}}
for _word, _value in NUMBERS.items():
    if _word not in ("a", "an"):  # "1 cat" -> "a cat" is a count: ``attributes`` judges it
        _WORDS_OF.setdefault(_value, set()).add(_word)
for _i, _word in enumerate(_TEENS):
    _WORDS_OF[13 + _i] = {_word}
for _i, _tens in enumerate(_TENS):  # "seventy", "seventy-five", "seventy five"
    _WORDS_OF[20 + 10 * _i] = {_tens}
    for _unit in range(1, 10):
        _one = next(
            w
            for w in _WORDS_OF[_unit]
            if w in ("one two three four five six seven eight nine".split())
        )
        _WORDS_OF[20 + 10 * _i + _unit] = {f"{_tens}-{_one}", f"{_tens} {_one}"}


def number_findings(prompt: str, text: str, quoted: list[str]) -> list[Finding]:
    """A ``lost_number`` finding for the prompt's numbers (outside ``quoted`` spans) the text
    lacks."""
    outside = prompt
    for span in quoted:
        outside = outside.replace(span, " ")
    said = {_plain(n) for n in _NUMBER.findall(text)}
    lower = text.lower()
    lost = [n for n in dict.fromkeys(_NUMBER.findall(outside)) if not _kept(n, said, lower)]
    if not lost:
        return []
    shown = ", ".join(f'"{n}"' for n in lost[:4])
    return [
        Finding(
            kind="lost",
            code="lost_number",
            words=lost,
            detail=f"the output lost {shown} from the prompt",
        )
    ]


def _plain(number: str) -> str:
    return number.replace(",", "")


def _kept(number: str, said: set[str], lower_text: str) -> bool:
    if _plain(number) in said:
        return True
    if not number.isdigit():
        return False
    return any(re.search(rf"\b{word}\b", lower_text) for word in _WORDS_OF.get(int(number), ()))
