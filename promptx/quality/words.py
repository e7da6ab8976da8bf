"""Split an English text into words, and say what kind of word one is.

A ``Word`` is lower-cased with a possessive 's removed, keeps its raw form, the index of
its phrase (punctuation starts a new one) and whether it stands inside quotes. Word
classes used when reading what stands before a noun: numbers, fillers, function words,
determiners, prepositions, adjectives, compound-noun modifiers, colour words.
Not here: which words are nouns of the scene (``mentions``), judgements (``assess``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from .lexicon import Lexicon

__all__ = [
    "DETERMINERS",
    "FILLER",
    "FUNCTION_WORDS",
    "GROUP_COUNTS",
    "NUMBERS",
    "PREPOSITIONS",
    "Word",
    "color_of",
    "compound_noun",
    "describes",
    "shades_next",
    "words",
]

# a run of letters and digits with a digit after a letter ("#20B2AA", "B2") is one word, not a
# count ("1girl", "3 apples" still count); "1,000", "3.5" and "12:30" are one number each
_TOKEN = re.compile(
    r"(?:\d*[^\W\d_]+\d)[^\W_]*|[^\W\d_]+(?:[-'’][^\W\d_]+)*|\d+(?:[.,:]\d+)*|[.!?;:,()\"“”«»]"
)
_PHRASE_END = frozenset(".!?;:,()")
_QUOTE_CHARS = frozenset('"“”«»')
NUMBERS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "single": 1,
    "lone": 1,
    "sole": 1,
    "solitary": 1,
    "twin": 2,
    "dozen": 12,
    "hundred": 100,
    "thousand": 1000,
    "a": 1,
    "an": 1,
}
GROUP_COUNTS = {"pair": 2, "couple": 2, "trio": 3, "quartet": 4, "dozen": 12}
# words that may stand between a count or colour and its noun ("three small red apples")
FILLER = frozenset(
    """small large big tiny little huge giant tall short old young new fluffy shiny
    round square bright dark light pale deep vivid fresh ripe wooden metal glass plastic stone
    striped spotted furry cute happy sleek vintage modern ancient wild baby adult and or the of
    very fat thin long curly straight wet dry""".split()
)
# colour words WordNet files as adjectives, with their family
_COLOR_ADJECTIVES = {
    "golden": "yellow",
    "blond": "yellow",
    "blonde": "yellow",
    "silvery": "silver",
    "silver": "silver",
    "reddish": "red",
    "bluish": "blue",
    "greenish": "green",
    "yellowish": "yellow",
    "pinkish": "pink",
    "purplish": "purple",
    "brownish": "brown",
    "blackish": "black",
    "whitish": "white",
    "grayish": "grey",
    "greyish": "grey",
    "orangish": "orange",
    "brunette": "brown",
    "auburn": "red",
    "ginger": "orange",
    "platinum": "silver",
    "raven": "black",
    "jet": "black",
    "dark": "dark",
}
FUNCTION_WORDS = frozenset(
    """at in on of to by for with from as is are was were and or but a an the
    it its his her their this that""".split()
)
DETERMINERS = frozenset("a an the this that its his her their every each".split())
PREPOSITIONS = frozenset(
    """along across around behind beside besides between beyond over under
    through throughout toward towards into onto upon within without near above below beneath
    past off out up down about after before against among inside outside via underneath amid
    amidst""".split()
)


@dataclass(frozen=True)
class Word:
    text: str  # lower case, possessive 's removed
    raw: str
    phrase: int  # index of the phrase (between punctuation marks)
    quoted: bool


def words(text: str) -> list[Word]:
    """The words of ``text`` in order (punctuation only moves the phrase counter)."""
    out: list[Word] = []
    phrase, quoted = 0, False
    plain = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    for raw in _TOKEN.findall(plain):
        if raw in _QUOTE_CHARS:
            quoted = not quoted if raw == '"' else raw in "“«"
            phrase += 1
            continue
        if raw in _PHRASE_END:
            phrase += 1
            continue
        low = raw.lower().replace("’", "'")
        if low.endswith("'s"):
            low = low[:-2]
        out.append(Word(low, raw, phrase, quoted))
    return out


def color_of(word: str, lex: Lexicon) -> str | None:
    """The colour family a word names; a compound names its last colour ("cobalt-blue")."""
    if "-" in word:
        return next((c for c in (color_of(p, lex) for p in reversed(word.split("-"))) if c), None)
    return _COLOR_ADJECTIVES.get(word) or lex.color_family(word)


def shades_next(ws: list, i: int, lex: Lexicon) -> bool:
    """The word at ``i`` only shades the hue after it: "dark blue" is a blue, not a dark
    ("dark grey", "dark brown" stay dark too: near black)."""
    return (
        ws[i].text == "dark"
        and i + 1 < len(ws)
        and ws[i + 1].phrase == ws[i].phrase
        and color_of(ws[i + 1].text, lex) not in (None, "grey", "brown", "black", "dark")
    )


def describes(word: str, lex: Lexicon, *, compound: bool = False) -> bool:
    """A word that may stand between a count and its noun: a known filler, a participle in
    -ed, an adjective, or (``compound``: only nouns stand between it and the head) a singular
    noun used as a modifier ("heel" in "a single red high heel shoe")."""
    if word in FILLER or word.endswith(("-colored", "-coloured", "ed")):
        return True
    if word in NUMBERS or word in FUNCTION_WORDS or word in PREPOSITIONS or word.endswith("ing"):
        return False
    if lex.is_modifier_word(word):
        return True
    return compound and compound_noun(word, lex)


def compound_noun(word: str, lex: Lexicon) -> bool:
    noun = lex.noun_lemma(word)
    return noun == word and lex.is_noun(noun) and not lex.mostly_verb(noun)
