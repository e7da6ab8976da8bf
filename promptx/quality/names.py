"""Names the lexicon does not know, in a prompt that names nothing else.

"Burj Khalifa, zoom in.", "The camera orbits around. Petra, the camera circles
around.": the landmark is the whole subject, yet no WordNet noun says it, so no
subject check reads it and an output about "a white tower on a mound" passed.
Here each capitalised word of such a prompt that the lexicon does not know
must stand in the output (as a part of a word: "Fortre" is kept by "fortress").
Only prompts without any other noun but picture words are judged (a name
beside known subjects is often a style or a brand the output may drop: "like
a Pixar movie"); words out of quotes, English prompts only, and no misspelling
of a known word ("Loudsspeaker"). Not here: known names ("Eiffel", "Shanghai"
are nouns: ``assess``).
"""

from __future__ import annotations

import re

from promptx.text.cleanup import STOPWORDS
from promptx.text.language import latin_foreign

from .assessment import Finding
from .lexicon import Lexicon
from .mentions import PICTURE_WORDS, Mention

__all__ = ["name_findings"]

_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”")


def name_findings(prompt: str, text: str, source: list[Mention], lex: Lexicon) -> list[Finding]:
    """A ``lost_name`` for each unknown capitalised word of a prompt that names nothing else
    and that the output does not say."""
    if latin_foreign(prompt) or any(
        not m.modifier and m.lemma not in PICTURE_WORDS for m in source
    ):
        return []
    said = text.lower()
    lost = [name for name in unknown_names(prompt, lex) if name.lower() not in said]
    if not lost:
        return []
    return [
        Finding(
            kind="lost",
            code="lost_name",
            words=lost,
            detail=f"the output lost the name the prompt is about ({' '.join(lost)})",
        )
    ]


def unknown_names(prompt: str, lex: Lexicon) -> list[str]:
    """Capitalised words out of quotes that the lexicon does not know and that misspell no
    word it knows (one letter too many: "Loudsspeaker")."""
    out = []
    for word in re.findall(r"[A-Za-z]+", _QUOTED.sub(" ", prompt)):
        low = word.lower()
        if (
            word[0].isupper()
            and low not in STOPWORDS
            and not lex.knows(low)
            and not _misspelt(low, lex)
        ):
            out.append(word)
    return out


def _misspelt(word: str, lex: Lexicon) -> bool:
    """A long word that is a known word with one letter more (short ones are often names:
    "Burj" is "bur" and a letter)."""
    return len(word) >= 7 and any(lex.knows(word[:i] + word[i + 1 :]) for i in range(len(word)))
