"""Guess the language of a short prompt from the scripts its letters use.

This is a heuristic, not a language identifier: it looks only at Unicode
script ranges, so it can tell Chinese, Japanese, Korean and "English" (text
written in ASCII letters) apart, and calls everything else "other". It does
not tell English from French or German (all ASCII-ish Latin text is "en"),
and text written only in kanji is reported as "zh". Good enough to decide
whether a prompt is CJK, which is all promptx needs it for.

The same script ranges define what a word is for every word budget
(``count_words``: each CJK character is one word).
"""

from __future__ import annotations

import re

__all__ = [
    "CJK_CHARS",
    "count_words",
    "detect_language",
    "has_cjk",
    "is_cjk_char",
    "latin_foreign",
    "script_counts",
]

# (first, last) code points, inclusive.
_HAN = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x2FA1F))
_KANA = ((0x3040, 0x309F), (0x30A0, 0x30FF), (0x31F0, 0x31FF), (0xFF66, 0xFF9F))
_HANGUL = ((0x1100, 0x11FF), (0x3130, 0x318F), (0xA960, 0xA97F), (0xAC00, 0xD7AF))


# the body of a regex character class matching one CJK character
CJK_CHARS = "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _HAN + _KANA + _HANGUL)
_CJK = re.compile(f"[{CJK_CHARS}]")
_WORD = re.compile(r"\S+")


def has_cjk(text: str) -> bool:
    """True when ``text`` holds any Han, kana or Hangul character (fast: one regex scan)."""
    return _CJK.search(text) is not None


def _in(ranges: tuple[tuple[int, int], ...], cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in ranges)


def is_cjk_char(ch: str) -> bool:
    """True for a Han, kana or Hangul character (a 'word' on its own)."""
    cp = ord(ch)
    return _in(_HAN, cp) or _in(_KANA, cp) or _in(_HANGUL, cp)


def script_counts(text: str) -> dict[str, int]:
    """Count letters by script: han, kana, hangul, ascii, other_letters."""
    counts = {"han": 0, "kana": 0, "hangul": 0, "ascii": 0, "other_letters": 0}
    for ch in text:
        cp = ord(ch)
        if _in(_HAN, cp):
            counts["han"] += 1
        elif _in(_KANA, cp):
            counts["kana"] += 1
        elif _in(_HANGUL, cp):
            counts["hangul"] += 1
        elif ch.isascii() and ch.isalpha():
            counts["ascii"] += 1
        elif ch.isalpha():
            counts["other_letters"] += 1
    return counts


def detect_language(text: str) -> str:
    """Return "zh", "ja", "ko", "en" or "other" for ``text`` (a heuristic).

    A CJK character carries about as much as a whole Latin word, so CJK
    characters are weighed four letters each against Latin letters: if they
    win, the text is CJK; then Hangul-majority text is "ko", text with kana is
    "ja" (kana is what Japanese has and Chinese has not), the rest "zh".
    Otherwise, when at least 90% of the letters are ASCII, it is "en".
    Text with no letters at all (empty, digits, emoji) is "other".
    """
    c = script_counts(text)
    cjk = c["han"] + c["kana"] + c["hangul"]
    latin = c["ascii"] + c["other_letters"]
    if cjk == 0 and latin == 0:
        return "other"
    if cjk * 4 >= latin:
        if c["hangul"] * 2 > cjk:
            return "ko"
        if c["kana"] > 0 and c["kana"] * 10 >= c["kana"] + c["han"]:
            return "ja"
        return "zh" if c["han"] else ("ja" if c["kana"] else "ko")
    if c["ascii"] >= 0.9 * latin:
        return "en"
    return "other"


def count_words(text: str) -> int:
    """Count words: whitespace-separated words, each CJK character as one word.

    (Wan and friends measure Chinese prompt length in characters, so a 200-"word"
    budget means 200 characters for Chinese.) Tokens made only of punctuation (a
    lone dash, a full-width comma) do not count. The one counter behind every
    word budget: templates' lengths, the generation stop and clean-up's cut.
    """
    count = 0
    for token in _WORD.findall(text):
        if not has_cjk(token):
            count += any(c.isalnum() for c in token)
            continue
        cjk = sum(1 for ch in token if is_cjk_char(ch))
        rest = "".join(" " if is_cjk_char(ch) else ch for ch in token)
        count += cjk + sum(1 for piece in rest.split() if any(c.isalnum() for c in piece))
    return count


# function words of the Latin-script languages prompts come in, that English does not use
_FOREIGN_WORDS = frozenset(
    """der die das und den dem ein eine einer mit auf im vom zum zur le la les
    et des du une sur avec dans el los las y del al una con en por para il lo gli di della nel con
    os as uma um do da dos das em com no na""".split()
)
_ENGLISH_WORDS = frozenset("the a an and of in on with at to by is are".split())


def latin_foreign(text: str) -> bool:
    """A prompt in German, French, Spanish, Italian or Portuguese: its words are not English
    nouns, so comparing them would call each article a lost subject."""
    ws = re.findall(r"[a-zà-ÿ]+", text.lower())
    foreign = sum(w in _FOREIGN_WORDS for w in ws)
    return foreign >= 1 and foreign > sum(w in _ENGLISH_WORDS for w in ws)
