"""Is a noun of a text in the scene, or only pictured, figurative or outside it?

"a statue of a man", "like a silent guardian", "stands sentinel", "a toy horse": pictured
or figurative; "carved by a master craftsman", "the Parthenon's creators", "inspired
artists, poets and architects", "the artistry of the baker", "the distant chirping of
birds", "as if someone is about to sit": someone outside the scene (a maker, an audience,
the owner of an abstraction, a sound, a supposition). Not here: reading the nouns
(``mentions``), deciding what a prompt licenses (``licensing``).
"""

from __future__ import annotations

from .lexicon import Lexicon
from .words import DETERMINERS, Word, compound_noun, describes

__all__ = ["SOUNDS", "depicted_at"]

# what a depicted mention stands after: "a statue of a man", "a painting of two horses"
_DEPICTIONS = frozenset(
    """statue sculpture painting portrait drawing sketch carving figurine mural
    poster photo photograph picture image silhouette reflection shadow toy doll logo icon emblem
    tattoo engraving print illustration model replica cutout""".split()
)
# a likeness, not a presence: "like a sentinel", "stands as a silent guardian", "resembling a
# dancer"
_LIKENESS = frozenset("like resembling resemble resembles unlike".split())
_SIMILE_FILLERS = frozenset(
    """silent lone single giant tiny little proud ancient watchful patient
    faithful loyal old great small""".split()
)
# "stands sentinel": a role word right after these verbs is not a person in the scene
_STAND_AS_ROLE = frozenset("stand stands standing stood".split())
# "stands as", "serves as", "acts as" a role
_ROLE_VERBS = frozenset("stand stands standing serve serves serving act acts acting".split())
# words before a noun that make it an object, not a living subject ("plush animals")
_DEPICTING_ADJECTIVES = frozenset(
    """plush stuffed toy origami carved
    painted printed embroidered cartoon""".split()
)
# materials that make a likeness of a being ("a paper crane", "an inflatable rabbit", "a cardboard
# car") but a real thing of anything else ("dry paper towels", "an inflatable mattress")
_LIKENESS_MATERIALS = frozenset("paper inflatable cardboard".split())
# in the scene's making or its audience, not in the scene: "built by a craftsman",
# "inspired countless artists", "inviting someone to sit", "the Parthenon's creators"
_MAKING = frozenset(
    """made built crafted carved designed painted created constructed erected sculpted
    handcrafted forged woven commissioned transformed shaped drawn sketched""".split()
)
_AUDIENCE = frozenset(
    """inspire inspires inspired inspiring invite invites invited inviting captivate
    captivates captivated captivating beckon beckons beckoning enchant enchants enchanted
    enchanting""".split()
)
_QUANTIFIERS = frozenset(
    """countless many numerous all generations of various millions thousands
    hundreds""".split()
)
# heads of an "of" phrase that is not a place in the scene: "the artistry of the baker"
_ABSTRACT = frozenset(
    {
        "noun.cognition",
        "noun.act",
        "noun.attribute",
        "noun.communication",
        "noun.feeling",
        "noun.state",
        "noun.possession",
        "noun.motive",
        "noun.time",
    }
)
# "the right of": a side, though WordNet's first "right" is a right someone has
_SIDES = frozenset("right left".split())
# script names before "characters": writing, not people ("signs in Chinese characters")
_SCRIPTS = frozenset(
    """chinese japanese korean latin greek arabic cyrillic hebrew kanji hanzi
    gothic runic bold handwritten painted carved""".split()
)
# a heard, not seen, mention: "birds chirp in the distance"
SOUNDS = frozenset(
    """chirp chirps chirping sing sings singing hoot hoots hooting howl howls
    howling bark barks barking tweet tweets tweeting caw caws cawing croak croaks croaking buzz
    buzzes buzzing call calls calling song songs sound sounds cry cries""".split()
)


def depicted_at(ws: list[Word], i: int, lex: Lexicon) -> bool:
    """The word at ``i`` is pictured, figurative or names someone outside the scene."""
    return _is_depicted(ws, i) or _likeness_of_a_being(ws, i, lex) or absent_at(ws, i, lex)


def _likeness_of_a_being(ws: list[Word], i: int, lex: Lexicon) -> bool:
    if i == 0 or ws[i - 1].text not in _LIKENESS_MATERIALS:
        return False
    return bool(lex.salient_class(lex.noun_lemma(ws[i].text) or ""))


def _is_depicted(ws: list[Word], i: int) -> bool:
    """A picture of it, a toy of it, or a figure of speech: "like a guardian", "stands sentinel"."""
    if i and ws[i - 1].text in _DEPICTING_ADJECTIVES:
        return True
    if ws[i].text in ("character", "characters") and i and ws[i - 1].text in _SCRIPTS:
        return True  # "signs in Chinese characters": writing
    for j in range(max(0, i - 3), i):
        if ws[j].text == "of" and (
            j >= 1 and ws[j - 1].text in _DEPICTIONS or j >= 2 and ws[j - 2].text in _DEPICTIONS
        ):
            return True  # "a photograph above, of two friends"
        likeness = ws[j].text in _LIKENESS or (
            ws[j].text == "as" and j and ws[j - 1].text in _ROLE_VERBS
        )
        if likeness and all(
            w.text in DETERMINERS or w.text in _SIMILE_FILLERS for w in ws[j + 1 : i]
        ):
            return True
    return i > 0 and ws[i - 1].text in _STAND_AS_ROLE


def absent_at(ws: list[Word], i: int, lex: Lexicon) -> bool:
    """The word at ``i`` names someone outside the scene: the maker ("carved by a craftsman",
    "the Parthenon's creators"), an audience ("inspired countless artists", "inviting someone
    to sit"), or the owner of an abstract thing ("the artistry of the baker", "the imagination
    of people"); later items of a list ("artists, poets and writers") follow its first."""
    start = _list_start(ws, i)
    if start != i:
        return absent_at(ws, start, lex)
    if (
        i > 1
        and ws[i - 1].text in ("and", "or")
        and ws[i - 2].phrase == ws[i].phrase
        and lex.noun_lemma(ws[i - 2].text)
    ):
        return absent_at(ws, i - 2, lex)  # "inspired artists and architects"
    if _hypothetical(ws, i):
        return True  # "as if someone is about to sit"
    owner = _before_adjectives(ws, i, lex)
    if (
        owner is not None
        and ws[owner].raw.lower().endswith(("'s", "’s"))
        and not lex.salient_class(lex.noun_lemma(ws[owner].text) or "")
    ):
        return True  # "the temple's creators", "the tower's lone inhabitant"
    compound = True
    for j in range(i - 1, max(-1, i - 5), -1):
        t = ws[j].text
        if ws[j].phrase != ws[i].phrase:
            break
        if t in _AUDIENCE:
            return True
        if t == "by":
            return any(w.text in _MAKING for w in ws[max(0, j - 6) : j])
        if t == "of" and j:
            if ws[j - 1].text in SOUNDS:
                return True  # "the distant chirping of birds": heard
            if ws[j - 1].text in _SIDES:
                return False  # "on the right of a bench": a place
            head_noun = lex.noun_lemma(ws[j - 1].text)  # "full of creatures": no head noun
            return (
                bool(head_noun) and lex.is_noun(head_noun) and lex.lexname(head_noun) in _ABSTRACT
            )
        if (
            t not in DETERMINERS
            and t not in _QUANTIFIERS
            and not describes(t, lex, compound=compound)
        ):
            break
        compound = compound and compound_noun(t, lex)
    return False


def _hypothetical(ws: list[Word], i: int) -> bool:
    """Inside "as if ..." or "as though ...", in the same sentence part."""
    for j in range(i - 1, max(0, i - 8), -1):
        if ws[j].phrase != ws[i].phrase:
            return False
        if ws[j].text in ("if", "though") and ws[j - 1].text == "as":
            return True
    return False


def _before_adjectives(ws: list[Word], i: int, lex: Lexicon) -> int | None:
    """The index of the word before the adjectives in front of ``ws[i]`` (same phrase)."""
    j = i - 1
    while j >= 0 and ws[j].phrase == ws[i].phrase and lex.is_modifier_word(ws[j].text):
        j -= 1
    return j if j >= 0 and ws[j].phrase == ws[i].phrase else None


def _list_start(ws: list[Word], i: int) -> int:
    """The first item of the comma list that ``ws[i]`` belongs to ("inspired artists, poets,
    and writers": "artists"); ``i`` itself when it is no later item of a list. A later item
    fills its phrase alone (after "and"/"or")."""
    if i + 1 < len(ws) and ws[i + 1].phrase == ws[i].phrase and ws[i + 1].text not in ("and", "or"):
        return i
    start = i
    while True:
        k = start - 1
        if k >= 0 and ws[k].text in ("and", "or") and ws[k].phrase == ws[start].phrase:
            k -= 1
        if k < 0 or ws[k].phrase == ws[start].phrase:
            return start
        start = k
        if k == 0 or ws[k - 1].phrase == ws[k].phrase:
            return start  # words before it in its phrase: the first item
