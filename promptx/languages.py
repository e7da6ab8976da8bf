"""Identify the language of a short prompt: English, another language, or a mix.

``identify_language`` returns a code: "en"; "zh", "ja", "ko" for CJK text; "ru", "uk",
"el", "ar", "he", "hi", "th" for text in those scripts; for Latin-script text the language
whose common prompt words it holds (templates/languages/latin.toml: Dutch, German, French,
Spanish, ... the first listed wins a tie), weighed against the English words it holds
(templates/languages/english.txt); "other" for text with no letters, or Latin-script text
whose words are mostly neither English nor of a listed language; and two codes joined by
"+" (``"en+zh"``) for a prompt that mixes English words with a clause in another script.
A heuristic for short prompts, not a general language identifier: it decides whether the
English-only parts of promptx can read a prompt.

Not here: the script-level guess the text rules use (``promptx.text.language``).
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass

from .profiles.registry import builtin_template_dir
from .text.language import detect_language, has_cjk, is_cjk_char, script_counts

__all__ = ["LANGUAGE_NAMES", "describe_language", "identify_language", "is_english_word"]

_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
# scripts told by their letters alone: (code, first, last code point)
_SCRIPTS = (
    ("ru", 0x0400, 0x04FF),
    ("el", 0x0370, 0x03FF),
    ("he", 0x0590, 0x05FF),
    ("ar", 0x0600, 0x06FF),
    ("hi", 0x0900, 0x097F),
    ("th", 0x0E00, 0x0E7F),
)
_UKRAINIAN_LETTERS = frozenset("іїєґІЇЄҐ")
# a mix: at least this many CJK characters beside at least this many English words
MIX_CJK_CHARS = 2
MIX_ENGLISH_WORDS = 2
# Latin text with this many words or more is "other" when under this share of them is English
UNKNOWN_MIN_WORDS = 3
UNKNOWN_ENGLISH_SHARE = 1 / 3

LANGUAGE_NAMES = {
    "en": "English",
    "zh": "Chinese",
    "ja": "Japanese",
    "ko": "Korean",
    "ru": "Russian",
    "uk": "Ukrainian",
    "el": "Greek",
    "ar": "Arabic",
    "he": "Hebrew",
    "hi": "Hindi",
    "th": "Thai",
}


@dataclass(frozen=True)
class _Latin:
    code: str
    name: str
    letters: frozenset[str]
    words: frozenset[str]

    def hits(self, words: list[str]) -> int:
        """Words of this language in ``words``, a word with one of its letters counted too."""
        return sum(w in self.words or bool(self.letters.intersection(w)) for w in words)


@functools.lru_cache(maxsize=1)
def _latin_languages() -> tuple[_Latin, ...]:
    data = tomllib.loads(
        (builtin_template_dir() / "languages" / "latin.toml").read_text(encoding="utf-8")
    )
    return tuple(
        _Latin(
            code,
            table["name"],
            frozenset(table["letters"]),
            frozenset(table["words"].lower().split()),
        )
        for code, table in data.items()
    )


@functools.lru_cache(maxsize=1)
def _english_words() -> frozenset[str]:
    text = (builtin_template_dir() / "languages" / "english.txt").read_text(encoding="utf-8")
    return frozenset(line for line in text.split("\n") if line and not line.startswith("#"))


def is_english_word(word: str) -> bool:
    """A known English word (lower case), or one with an English ending on a known stem
    ("skateboarding")."""
    known = _english_words()
    if word in known:
        return True
    return any(
        word.endswith(end) and word[: -len(end)] in known
        for end in ("s", "es", "ed", "ing", "ly", "'s")
    )


def _script_code(text: str) -> str | None:
    """The code of the non-Latin, non-CJK script most of the letters are in, if any."""
    letters = [ch for ch in text if ch.isalpha()]
    for code, lo, hi in _SCRIPTS:
        if sum(lo <= ord(ch) <= hi for ch in letters) * 2 > len(letters):
            if code == "ru" and _UKRAINIAN_LETTERS.intersection(text):
                return "uk"
            return code
    return None


def _latin_code(words: list[str]) -> str:
    """The language of Latin-script ``words``: English, a listed language, or "other". Single
    letters ("U.S.", "a") say nothing: they are left out."""
    words = [w for w in words if len(w) > 1]
    if not words:
        return "en"
    english = sum(is_english_word(w) for w in words)
    best = max(_latin_languages(), key=lambda lang: lang.hits(words))
    best_hits = best.hits(words)
    if best_hits > english or (best_hits and english * 2 < len(words)):
        return best.code
    if len(words) >= UNKNOWN_MIN_WORDS and english < len(words) * UNKNOWN_ENGLISH_SHARE:
        return "other"
    return "en"


def identify_language(text: str) -> str:
    """The language code of ``text`` (see the module's docstring)."""
    if not any(ch.isalpha() for ch in text):
        return "other"
    script = _script_code(text)
    if script is not None:
        return script
    coarse = detect_language(text)
    counts = script_counts(text)
    cjk = counts["han"] + counts["kana"] + counts["hangul"]
    latin_words = [w for w in _WORD.findall(text.lower().replace("i\u0307", "i")) if not has_cjk(w)]
    if cjk:
        english = sum(is_english_word(w) for w in latin_words)
        if cjk >= MIX_CJK_CHARS and english >= MIX_ENGLISH_WORDS:
            return f"en+{detect_language(''.join(ch for ch in text if is_cjk_char(ch)))}"
        if coarse in ("zh", "ja", "ko"):
            return coarse
    return _latin_code(latin_words) if latin_words else coarse


def describe_language(code: str) -> str:
    """ "Spanish", "mixed English and Chinese", "unknown" ..."""
    if "+" in code:
        return "mixed " + " and ".join(describe_language(part) for part in code.split("+"))
    if code == "other":
        return "unidentified"
    names = {lang.code: lang.name for lang in _latin_languages()}
    return LANGUAGE_NAMES.get(code) or names.get(code) or code
