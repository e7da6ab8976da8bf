"""Read an English text into noun mentions: lemma, colours, count, and how it is used.

A mention is one noun occurrence with what stands right before it in its
phrase ("three red apples": apple, count 3, colours {red}, materials; "several
glasses": a vague count), whether it only modifies a following noun ("dog bed",
"cat food"), whether it is depicted or otherwise not in the scene ("a statue of
a man", "built by a craftsman", "inspired artists") and whether it stands
inside quotes (``presence``). Words and their classes come from ``words``, lexical facts
from ``lexicon``. Not here: any judgement (``assess``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .lexicon import Lexicon
from .materials import is_material
from .presence import SOUNDS, depicted_at
from .words import (
    DETERMINERS,
    FUNCTION_WORDS,
    GROUP_COUNTS,
    NUMBERS,
    Word,
    color_of,
    compound_noun,
    describes,
    shades_next,
)

__all__ = ["GROUP_WORDS", "PICTURE_WORDS", "Mention", "mentions"]

# nouns that describe the picture, not what is in it
PICTURE_WORDS = frozenset(
    """photo photograph picture image shot scene video clip footage view frame
    still camera lens style background foreground closeup close-up angle render painting drawing
    illustration art artwork portrait landscape wallpaper time lapse timelapse motion quality detail
    light lighting color colour side top front bottom left right middle center centre home tableau
    backdrop pan zoom tilt""".split()
)  # "a slow pan across the bench": the camera's move
# quantities without a number: "several glasses" keeps the glasses but not "four"
_VAGUE_COUNTS = frozenset(
    "several many some few numerous multiple countless various dozens".split()
)
# "motion that suits the scene": after these a word ending in -s is a verb
_RELATIVES = frozenset("that which who".split())
# verbs whose spelling is also a plural noun ("does" -> doe)
_AUXILIARIES = frozenset("does".split())
# words after a verb in -s that its subject does something with: "the train snakes across",
# "the dog wolfs down its food"
_AFTER_VERB = frozenset(
    """across through along past around over under down up into onto toward towards
    out away off at its his her their""".split()
)
# a group word before "of" makes its members many: "a pod of dolphins", "schools of fish"
GROUP_WORDS = frozenset(
    """pod school shoal flock herd swarm pack troop colony gaggle group crowd
    bunch band horde throng cluster litter brood""".split()
)
# an amount of what follows "of": "a body of water", "a stretch of beach", "a slice of cake"
_PARTITIVES = frozenset("body expanse stretch patch sheet piece slice bit strip".split())
_NEXT_TO = frozenset("next close according up due thanks similar compared".split())
# words before a number that make it a part of the whole: "the other five friends"
_SUBSET = frozenset("other remaining last first next another".split())


@dataclass(frozen=True)
class Mention:
    lemma: str
    position: int  # index into ``words``
    colors: frozenset[str]  # colour families of the words before it in its phrase
    count: int | None  # an explicit number before it (1 for "a"/"single")
    modifier: bool  # it modifies the next noun ("dog bed", "bird's-eye")
    depicted: bool  # "a statue of a man", "built by a craftsman": not in the scene
    quoted: bool
    vague: bool = False  # "several", "many": a quantity without a number
    materials: frozenset[str] = frozenset()  # material words before it ("wooden", "marble")
    many: bool = False  # plural, or the members of a group ("a pod of dolphins")


def mentions(ws: list[Word], lex: Lexicon) -> list[Mention]:
    """Noun mentions of ``ws`` (nouns used mostly as nouns, colours excluded)."""
    out: list[Mention] = []
    for i, w in enumerate(ws):
        lemma = lex.noun_lemma(w.text)
        after_article = bool(
            lex.salient_class(lemma or "")
            or _being(w.text, lemma, lex)
            or _coloured_being(ws, i, lemma, lex)
        ) and _after_article(ws, i, lex)
        if (
            lemma is None
            or not (lex.is_noun(lemma) or after_article)
            or color_of(w.text, lex)
            and not _fruit_named(ws, i, lemma, lex)
            or w.text in NUMBERS
            or w.text in _AUXILIARIES
        ):
            continue  # a word used mostly as a verb is a noun after "a": "a cook"
        if (
            w.text.endswith("ing")
            and lex.verb_lemma(w.text)
            and not (i and ws[i - 1].text in DETERMINERS)
        ):
            continue  # "storm clouds gathering": a verb, not "a gathering"
        if i and ws[i - 1].text in _RELATIVES and w.text.endswith("s") and lex.verb_lemma(w.text):
            continue  # "motion that suits the scene": a verb
        if _verb_after_subject(ws, i, lex):
            continue  # "the train snakes across the bridge": a verb
        if (
            i + 1 < len(ws)
            and ws[i + 1].text == "of"
            and (
                lemma in GROUP_COUNTS
                or lemma in GROUP_WORDS
                or lemma in _PARTITIVES
                or lex.lexname(lemma) == "noun.group"
            )
        ):
            continue  # "a couple of tents", "a gathering of clouds": see the members
        if (
            i
            and ws[i - 1].text == "to"
            and w.text == lex.verb_lemma(w.text)
            and lex.salient_class(lemma)
            and not (i > 1 and ws[i - 2].text in _NEXT_TO)
        ):
            continue  # "pauses to bat at a toy": a verb
        colors, count, vague, materials = _modifiers(ws, i, lex)
        many = (w.text != lemma and not w.text.endswith(("ed", "ing"))) or _group_member(ws, i, lex)
        out.append(
            Mention(
                lemma,
                i,
                frozenset(colors),
                count,
                _is_modifier(ws, i, lex),
                depicted_at(ws, i, lex),
                w.quoted,
                vague,
                frozenset(materials),
                many,
            )
        )
    return out


def _group_count(ws: list[Word], k: int) -> int | None:
    """The members a counted group word at ``k`` stands for: "a pair of" 2, "two pairs of" 4
    (None: no group word, or a vague one: "dozens of")."""
    times = NUMBERS.get(ws[k - 1].text, 1) if k and ws[k - 1].phrase == ws[k].phrase else 1
    group = ws[k].text
    if group.endswith("s") and times > 1:  # "two pairs of"; a bare "dozens of" is vague
        group = group[:-1]
    return GROUP_COUNTS[group] * times if group in GROUP_COUNTS else None


# first noun senses of words used mostly as verbs that still name a being: "a blue bear", "the duck"
_BEINGS = frozenset({"noun.animal", "noun.person"})


def _being(word: str, lemma: str | None, lex: Lexicon) -> bool:
    """A word whose first noun sense is an animal or a person, said in that noun's own form and
    not an adjective ("the bear", "a cook"; not "a modern room", "the ground": grind)."""
    return (
        bool(lemma)
        and word in (lemma, lemma + "s", lemma + "es")
        and lex.lexname(lemma) in _BEINGS
        and not describes(word, lex)
    )


_BE = frozenset("is are was were has have".split())


def _coloured_being(ws: list[Word], i: int, lemma: str | None, lex: Lexicon) -> bool:
    """A word whose first noun sense is a being, right after a colour or between an article and
    "is": "a yellow fly", "the fly is white" (an adjective too, but not there)."""
    if not (
        lemma
        and i > 0
        and ws[i].text in (lemma, lemma + "s", lemma + "es")
        and lex.lexname(lemma) in _BEINGS
    ):
        return False
    before_verb = ws[i - 1].text in ("a", "an", "the") and i + 1 < len(ws) and ws[i + 1].text in _BE
    return before_verb or bool(color_of(ws[i - 1].text, lex))


def _after_article(ws: list[Word], i: int, lex: Lexicon) -> bool:
    """ "a bear", "a blue bear", "the big brown bear", "two ducks": an article or a number before
    the word, over at most two colour or describing words in its phrase (a word used mostly as a
    verb is then a noun)."""
    for j in range(i - 1, max(-1, i - 4), -1):
        if ws[j].phrase != ws[i].phrase:
            return False
        if ws[j].text in ("a", "an", "the") or ws[j].text in NUMBERS and ws[j].text != "lone":
            return True
        if not (color_of(ws[j].text, lex) or describes(ws[j].text, lex)):
            return False
    return False


# first noun senses of colour words that name the fruit or food: "an orange", "a cherry"
_EDIBLE = frozenset({"noun.food", "noun.plant"})


def _fruit_named(ws: list[Word], i: int, lemma: str, lex: Lexicon) -> bool:
    """A colour word that names a fruit here: an article or number right before it and no noun
    or describing word after it in its phrase ("an orange on the bottom of a carrot", not "an
    orange car" or "a deep orange")."""
    if (
        not i
        or not (ws[i - 1].text in ("a", "an", "the") or ws[i - 1].text in NUMBERS)
        or lex.lexname(lemma) not in _EDIBLE
    ):
        return False
    nxt = ws[i + 1] if i + 1 < len(ws) else None
    return (
        nxt is None
        or nxt.phrase != ws[i].phrase
        or nxt.text in FUNCTION_WORDS
        or not (lex.noun_lemma(nxt.text) or describes(nxt.text, lex))
    )


def _verb_after_subject(ws: list[Word], i: int, lex: Lexicon) -> bool:
    """A word in -s that is a verb here: right after a singular noun or "it" in its phrase and
    before a word that follows a verb ("the train snakes across", "the dog wolfs down")."""
    w = ws[i]
    if not (0 < i < len(ws) - 1 and w.text.endswith("s") and lex.verb_lemma(w.text)):
        return False
    prev, nxt = ws[i - 1], ws[i + 1]
    if prev.phrase != w.phrase or nxt.phrase != w.phrase or nxt.text not in _AFTER_VERB:
        return False
    return prev.text == "it" or lex.noun_lemma(prev.text) == prev.text and lex.is_noun(prev.text)


def _group_member(ws: list[Word], i: int, lex: Lexicon) -> bool:
    """ "a pod of dolphins", "schools of colorful fish": one of many."""
    for j in range(i - 1, max(0, i - 4), -1):
        if ws[j].phrase != ws[i].phrase:
            return False
        if ws[j].text == "of":
            head = lex.noun_lemma(ws[j - 1].text)
            return ws[j - 1].text in GROUP_WORDS or head in GROUP_WORDS
        if not describes(ws[j].text, lex):
            return False
    return False


def _modifiers(ws: list[Word], i: int, lex: Lexicon) -> tuple[set[str], int | None, bool, set[str]]:
    """Colours, count, a vague quantity and materials said before the noun at ``i``, walking
    back over adjectives and compound nouns ("seven slender striped candles", "a single red
    high heel shoe")."""
    colors: set[str] = set()
    materials: set[str] = set()
    count, vague, compound = None, False, True
    j = i - 1
    while j >= 0 and i - j <= 5 and ws[j].phrase == ws[i].phrase:
        t = ws[j].text
        family = None if shades_next(ws, j, lex) else color_of(t, lex)
        if is_material(t):
            materials.add(t)
        elif family:
            colors.add(family)
        elif t in NUMBERS or t[:1].isdigit():
            subset = j and ws[j - 1].text in _SUBSET  # "the other five friends": some of them
            count = None if subset else NUMBERS[t] if t in NUMBERS else _whole_number(t)
            break
        elif t == "of" and j >= 1 and (group := _group_count(ws, j - 1)):
            count = group
            break
        elif t in _VAGUE_COUNTS:
            vague = True
            break
        elif not describes(t, lex, compound=compound):
            break
        compound = compound and compound_noun(t, lex)
        j -= 1
    return colors, count, vague, materials


def _is_modifier(ws: list[Word], i: int, lex: Lexicon) -> bool:
    """It modifies the next noun ("dog bed", "fish patterns") or is only heard ("birds chirp")."""
    if i + 1 >= len(ws) or ws[i + 1].phrase != ws[i].phrase:
        return False
    nxt = ws[i + 1].text
    if nxt.startswith(("eye", "-eye")) or nxt in SOUNDS or nxt.startswith("song"):
        return True  # bird's eye view, birdsong
    if nxt.endswith(("ing", "ed")):
        return False  # "a person wearing", "a dog chased"
    if nxt in FUNCTION_WORDS:
        return False  # "a lighthouse at dusk"
    lemma = lex.noun_lemma(nxt)
    verb = lex.verb_lemma(nxt)
    if verb and nxt.endswith("s") and i and ws[i - 1].text in ("a", "an", "one"):
        return False  # "a man waters the roses": its verb
    possessive = ws[i].raw.lower().endswith(("'s", "’s", "s'"))
    if (
        verb
        and ws[i].text.endswith("s")
        and lex.noun_lemma(ws[i].text) != ws[i].text
        and not possessive
    ):
        return False  # "a pod of dolphins arcs": plurals rarely modify
    return bool(lemma and lex.is_noun(lemma) and not (verb and lex.mostly_verb(verb)))


def _whole_number(token: str) -> int | None:
    """1000 for "1,000"; None for "3.5" or "12:30" (a measure or a time, not a count)."""
    plain = token.replace(",", "")
    return int(plain) if plain.isdigit() else None
