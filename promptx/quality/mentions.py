"""Read an English text into noun mentions: lemma, colours, count, and how it is used.

A mention is one noun occurrence with what stands right before it in its
phrase ("three red apples": apple, count 3, colours {red}), whether it only
modifies a following noun ("dog bed", "cat food"), whether it is depicted
rather than present ("a statue of a man") and whether it stands inside quotes.
Lexical facts come from ``lexicon``. Not here: any judgement (``assess``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from .lexicon import Lexicon

__all__ = ["PICTURE_WORDS", "Mention", "Word", "mentions", "words"]

# nouns that describe the picture, not what is in it
PICTURE_WORDS = frozenset("""photo photograph picture image shot scene video clip footage view frame
    still camera lens style background foreground closeup close-up angle render painting drawing
    illustration art artwork portrait landscape wallpaper time lapse timelapse motion quality detail
    light lighting color colour side top front bottom left right middle center centre home tableau""".split())

_TOKEN = re.compile(r"[^\W\d_]+(?:[-'’][^\W\d_]+)*|\d+|[.!?;:,()\"“”«»]")
_PHRASE_END = frozenset(".!?;:,()")
_QUOTE_CHARS = frozenset("\"“”«»")
_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
            "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "single": 1, "lone": 1, "sole": 1,
            "solitary": 1, "twin": 2, "dozen": 12, "a": 1, "an": 1}
_GROUP_COUNTS = {"pair": 2, "couple": 2, "trio": 3, "quartet": 4, "dozen": 12}
# words that may stand between a count or colour and its noun ("three small red apples")
_FILLER = frozenset("""small large big tiny little huge giant tall short old young new fluffy shiny
    round square bright dark light pale deep vivid fresh ripe wooden metal glass plastic stone
    striped spotted furry cute happy sleek vintage modern ancient wild baby adult and or the of
    very fat thin long curly straight wet dry""".split())
# colour words WordNet files as adjectives, with their family
_COLOR_ADJECTIVES = {"golden": "yellow", "blond": "yellow", "blonde": "yellow", "silvery": "grey",
                     "reddish": "red", "bluish": "blue", "greenish": "green", "yellowish": "yellow",
                     "pinkish": "pink", "purplish": "purple", "brownish": "brown", "blackish": "black",
                     "whitish": "white", "grayish": "grey", "greyish": "grey", "orangish": "orange",
                     "brunette": "brown", "auburn": "red", "ginger": "orange", "platinum": "grey",
                     "raven": "black", "jet": "black", "dark": "dark"}
_FUNCTION_WORDS = frozenset("""at in on of to by for with from as is are was were and or but a an the
    it its his her their this that""".split())
_DETERMINERS = frozenset("a an the this that its his her their every each".split())
# what a depicted mention stands after: "a statue of a man", "a painting of two horses"
_DEPICTIONS = frozenset("""statue sculpture painting portrait drawing sketch carving figurine mural
    poster photo photograph picture image silhouette reflection shadow toy doll logo icon emblem
    tattoo engraving print illustration model replica cutout""".split())
# a likeness, not a presence: "like a sentinel", "stands as a silent guardian", "resembling a dancer"
_LIKENESS = frozenset("like resembling resemble resembles unlike".split())
_SIMILE_FILLERS = frozenset("""silent lone single giant tiny little proud ancient watchful patient
    faithful loyal old great small""".split())
# "stands sentinel": a role word right after these verbs is not a person in the scene
_STAND_AS_ROLE = frozenset("stand stands standing stood".split())
# "stands as", "serves as", "acts as" a role
_ROLE_VERBS = frozenset("stand stands standing serve serves serving act acts acting".split())
# "motion that suits the scene": after these a word ending in -s is a verb
_RELATIVES = frozenset("that which who".split())
# verbs whose spelling is also a plural noun ("does" -> doe)
_AUXILIARIES = frozenset("does".split())
# words before a noun that make it an object, not a living subject ("plush animals")
_DEPICTING_ADJECTIVES = frozenset("""plush stuffed toy paper origami inflatable cardboard carved
    painted printed embroidered cartoon""".split())
# a heard, not seen, mention: "birds chirp in the distance"
_SOUNDS = frozenset("""chirp chirps chirping sing sings singing hoot hoots hooting howl howls
    howling bark barks barking tweet tweets tweeting caw caws cawing croak croaks croaking buzz
    buzzes buzzing call calls calling""".split())


@dataclass(frozen=True)
class Word:
    text: str          # lower case, possessive 's removed
    raw: str
    phrase: int        # index of the phrase (between punctuation marks)
    quoted: bool


@dataclass(frozen=True)
class Mention:
    lemma: str
    position: int                  # index into ``words``
    colors: frozenset[str]         # colour families of the words before it in its phrase
    count: int | None              # an explicit number before it (1 for "a"/"single")
    modifier: bool                 # it modifies the next noun ("dog bed", "bird's-eye")
    depicted: bool                 # "a statue of a man"
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


def mentions(ws: list[Word], lex: Lexicon) -> list[Mention]:
    """Noun mentions of ``ws`` (nouns used mostly as nouns, colours excluded)."""
    out: list[Mention] = []
    for i, w in enumerate(ws):
        lemma = lex.noun_lemma(w.text)
        if (lemma is None or not lex.is_noun(lemma) or color_of(w.text, lex) or w.text in _NUMBERS
                or w.text in _AUXILIARIES):
            continue
        if w.text.endswith("ing") and lex.verb_lemma(w.text) and not (i and ws[i - 1].text in _DETERMINERS):
            continue                   # "storm clouds gathering": a verb, not "a gathering"
        if i and ws[i - 1].text in _RELATIVES and w.text.endswith("s") and lex.verb_lemma(w.text):
            continue                   # "motion that suits the scene": a verb
        if i + 1 < len(ws) and ws[i + 1].text == "of" and (
                lemma in _GROUP_COUNTS or lex.lexname(lemma) == "noun.group"):
            continue                   # "a couple of tents", "a gathering of clouds": see the members
        colors, count = _modifiers(ws, i, lex)
        out.append(Mention(lemma, i, frozenset(colors), count, _is_modifier(ws, i, lex),
                           _is_depicted(ws, i), w.quoted))
    return out


def _modifiers(ws: list[Word], i: int, lex: Lexicon) -> tuple[set[str], int | None]:
    colors: set[str] = set()
    count = None
    j = i - 1
    while j >= 0 and i - j <= 5 and ws[j].phrase == ws[i].phrase:
        t = ws[j].text
        family = color_of(t, lex)
        if family:
            colors.add(family)
        elif t in _NUMBERS or t.isdigit():
            count = int(t) if t.isdigit() else _NUMBERS[t]
            break
        elif t == "of" and j >= 1 and ws[j - 1].text in _GROUP_COUNTS:
            count = _GROUP_COUNTS[ws[j - 1].text]
            break
        elif t not in _FILLER and not t.endswith(("-colored", "-coloured", "ed")):
            break
        j -= 1
    return colors, count


def _is_modifier(ws: list[Word], i: int, lex: Lexicon) -> bool:
    """It modifies the next noun ("dog bed", "fish patterns") or is only heard ("birds chirp")."""
    if i + 1 >= len(ws) or ws[i + 1].phrase != ws[i].phrase:
        return False
    nxt = ws[i + 1].text
    if nxt.startswith(("eye", "-eye")) or nxt in _SOUNDS or nxt.startswith("song"):
        return True                                   # bird's eye view, birdsong
    if nxt.endswith(("ing", "ed")):
        return False                                  # "a person wearing", "a dog chased"
    if nxt in _FUNCTION_WORDS:
        return False                                  # "a lighthouse at dusk"
    lemma = lex.noun_lemma(nxt)
    verb = lex.verb_lemma(nxt)
    if verb and nxt.endswith("s") and i and ws[i - 1].text in ("a", "an", "one"):
        return False                                  # "a man waters the roses": its verb
    return bool(lemma and lex.is_noun(lemma) and not (verb and lex.mostly_verb(verb)))


def _is_depicted(ws: list[Word], i: int) -> bool:
    """A picture of it, a toy of it, or a figure of speech: "like a guardian", "stands sentinel"."""
    if i and ws[i - 1].text in _DEPICTING_ADJECTIVES:
        return True
    for j in range(max(0, i - 3), i):
        if ws[j].text == "of" and j >= 1 and ws[j - 1].text in _DEPICTIONS:
            return True
        likeness = ws[j].text in _LIKENESS or (ws[j].text == "as" and j and ws[j - 1].text in _ROLE_VERBS)
        if likeness and all(w.text in _DETERMINERS or w.text in _SIMILE_FILLERS for w in ws[j + 1:i]):
            return True
    return i > 0 and ws[i - 1].text in _STAND_AS_ROLE

