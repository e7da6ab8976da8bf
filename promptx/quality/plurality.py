"""One thing made several, or a counted thing made more.

- One made several: a thing the prompt names once as one ("a bee", "one bee", "the
  wooden rectangle") that the output refers back to as several with a definite plural
  ("the bees", "both drones", "all the cups") or a number ("two wooden rectangles").
  Plain plurals are often scenery ("a tree" among "trees behind"), so only animals,
  made things, food and shapes are judged, never people ("a person" -> "people":
  passers-by in a busy place are licensed) or parts of a place ("the brick walls").
- Counted more: a number right before the noun (or the word it ends in: "four teacups" ->
  "the five cups") larger than the prompt's ("four cups" -> "the five cups"; fewer may be a
  subset: "the two cups on the left").
The other way ("knives" -> "a knife") is not judged: one of several is often shown at
a time. A noun the prompt names twice ("a black drone and a blue drone") or with a kind
of it ("a basketball and two soccer balls": "all three balls") is not judged either.
Different numbers said of the same noun ("three apples" -> "five apples") are
``attributes``' findings. Not here: whether the noun is kept at all (``assess``).
"""

from __future__ import annotations

from .assessment import Finding
from .lexicon import Lexicon
from .matching import unique
from .mentions import Mention
from .words import NUMBERS, Word

__all__ = ["plurality_findings"]

# things whose number matters: animals, made things, food, shapes (not "a tree" among "the
# trees behind", "a cloud" among "the clouds")
_THINGS = frozenset({"noun.animal", "noun.artifact", "noun.food", "noun.shape"})
_SCENERY = frozenset(
    {"noun.plant", "noun.object", "noun.location", "noun.phenomenon", "noun.group"}
)
# scenery first, a thing in a later sense: a fruit ("a plum": first the tree), an appliance ("a
# microwave")
_SCENERY_THINGS = {"noun.plant": "noun.food", "noun.phenomenon": "noun.artifact"}
_UNJUDGED = frozenset(
    """person people man woman child kid crowd family group wall window floor step stair
    brick tile road street path fence column pillar building""".split()
)  # people; parts of a place
# words before a plural that make it the prompt's thing said again as several ("the bees
# hover"), unlike scenery that happens to share its name ("dark clouds", "brick walls")
_DEFINITE = frozenset("the both these those all".split())
_STOPS = frozenset("the and or of a an".split())


def plurality_findings(
    source: list[Mention],
    output: list[Mention],
    src_words: list[Word],
    out_words: list[Word],
    lex: Lexicon,
) -> list[Finding]:
    """A ``count`` contradiction for each thing the prompt names once, as one ("a", "one", "the")
    or with a number, that the output makes more ("the bees", "both drones"; "four teacups" ->
    "the five cups")."""
    found = []
    for m in source:
        if (
            m.modifier
            or m.depicted
            or m.quoted
            or m.many
            and m.count is None
            or sum(s.lemma == m.lemma for s in source) > 1
        ):  # "a black drone and a blue drone"
            continue
        if any(
            s.lemma != m.lemma and (lex.more_general(m.lemma, s.lemma) or s.lemma.endswith(m.lemma))
            for s in source
        ):
            continue  # "a basketball and two soccer balls": "all three balls"
        same = [o for o in output if o.lemma == m.lemma and not o.modifier and not o.depicted]
        if (
            _one(m, src_words)
            and not m.many
            and m.lemma not in _UNJUDGED
            and _a_thing(m.lemma, lex)
        ):
            if any(_several(o, out_words) for o in same):
                found.append(_changed(m, "one", "several"))
        elif (m.count or 0) > 1 and (
            _a_thing(m.lemma, lex) or lex.lexname(m.lemma) == "noun.person"
        ):
            named = same + [
                o for o in output if _said_by_its_end(o, m, source)
            ]  # "four teacups": "the five cups"
            more = max((_counted(o, out_words) for o in named), default=0)
            if more > m.count:
                found.append(_changed(m, str(m.count), str(more)))
    return unique(found)


def _said_by_its_end(o: Mention, m: Mention, source: list[Mention]) -> bool:
    """``o`` names ``m`` by the word its name ends in ("cup" of "teacup"), and no other thing of
    the prompt ends in it ("two baseballs ... a basketball": "the three balls" are all of them)."""
    if (
        o.lemma == m.lemma
        or len(o.lemma) < 3
        or not m.lemma.endswith(o.lemma)
        or o.modifier
        or o.depicted
    ):
        return False
    return not any(s.lemma != m.lemma and s.lemma.endswith(o.lemma) for s in source)


def _a_thing(lemma: str, lex: Lexicon) -> bool:
    """Its first sense is a thing, or one of its next senses is and the first is not scenery
    ("a ring": first a shape's attribute, then the jewel; "a book"; not "a tree", a plant first),
    or it is the fruit of a plant or the appliance of a phenomenon ("a plum", "a microwave")."""
    names = lex.lexnames(lemma)
    if not names:
        return False
    later = set(names[1:])
    return (
        names[0] in _THINGS
        or names[0] not in _SCENERY
        and bool(later & _THINGS)
        or _SCENERY_THINGS.get(names[0]) in later
    )


def _one(m: Mention, src_words: list[Word]) -> bool:
    """The prompt counts it as one: "a bee", "one bee", "the wooden rectangle"."""
    return m.count == 1 or (
        m.count is None and _word_before(m, src_words) in ("the", "this", "that")
    )


def _several(o: Mention, out_words: list[Word]) -> bool:
    """The output refers to the thing as several: "the bees", "both drones", "all the cups", or
    counts it ("two wooden rectangles")."""
    return (
        o.many
        and o.count != 1
        and _word_before(o, out_words) in _DEFINITE
        or _counted(o, out_words) > 1
    )


def _counted(o: Mention, out_words: list[Word]) -> int:
    """The number right before the noun over describing words ("two wooden rectangles"), not one
    across "and the" ("the hands meet at twelve and the clock")."""
    for j in range(o.position - 1, max(-1, o.position - 4), -1):
        w = out_words[j]
        if w.phrase != out_words[o.position].phrase or w.text in _STOPS:
            return 0
        if w.text in NUMBERS:
            return NUMBERS[w.text]
    return 0


def _word_before(o: Mention, out_words: list[Word]) -> str:
    """The word before the mention's phrase head, skipping its describing words ("the tall
    trees")."""
    j = o.position - 1
    while (
        j >= 0
        and out_words[j].phrase == out_words[o.position].phrase
        and j >= o.position - 3
        and out_words[j].text not in _DEFINITE
    ):
        j -= 1
    return (
        out_words[j].text if j >= 0 and out_words[j].phrase == out_words[o.position].phrase else ""
    )


def _changed(m: Mention, want: str, got: str) -> Finding:
    return Finding(
        kind="contradiction",
        code="count",
        words=[m.lemma],
        detail=f'the output changes the count of "{m.lemma}" ({want} -> {got})',
    )
