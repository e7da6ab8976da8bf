"""Does a word of the output keep a word of the prompt?

The one matching rule every check shares: the same lemma, a synonym, a more
specific or more general term (not a catch-all such as "food"), a spelling
variant, a young person for "a child"; for things (not people, animals,
vehicles, plants or foods) also a near relative in WordNet ("ocean" and "sea";
but a crisp is not a pizza, a fern is not a tree). Not here: which words to
compare (``assess``, ``attributes``, ``relations``).
"""

from __future__ import annotations

from .assessment import Finding
from .lexicon import Lexicon

__all__ = ["KEPT_BY", "matches", "unique"]

_YOUNG_PEOPLE = frozenset("boy girl".split())
# catch-all words that show no particular thing: "food" does not keep a pizza
_TOO_GENERAL = frozenset("food thing object item stuff entity".split())
# lexicographer files where a near relative is another thing: a crisp is not a pizza, a fern not a
# tree
_RELATIVES_APART = frozenset({"noun.food", "noun.plant"})
# how far up WordNet a more general word of the output may be and still keep a prompt's thing
_MAX_HOPS_UP = 3
#: words that keep a thing WordNet files as a message or a possession (a book is a "work" there)
KEPT_BY = {
    given: frozenset(words.split())
    for given, words in {
        "book": "novel copy volume paperback hardcover hardback tome notebook journal diary "
        "storybook textbook album manual atlas cookbook comic",
        "newspaper": "broadsheet paper tabloid gazette daily",
        "magazine": "issue journal",
        "poster": "print placard",
        "ticket": "stub pass",
        "money": "cash coin banknote bill note dollar currency",
        "cash": "money coin banknote bill note dollar currency",
        "coin": "money cash",
        "banknote": "money cash bill note dollar",
    }.items()
}


def matches(given: str, other: str, lex: Lexicon) -> bool:
    """``other`` in the output keeps ``given`` of the prompt."""
    if given.rstrip("s") == other.rstrip("s"):  # "shoes" is a lemma too
        return True
    if other in _TOO_GENERAL:
        return False
    if other in KEPT_BY.get(given, ()):
        return True
    if lex.licenses(given, other):
        hops = lex.hops_above(other, given)  # "pastries" keeps "croissants", "food" does not
        return hops is None or hops <= _MAX_HOPS_UP
    if (
        other in _YOUNG_PEOPLE
        and lex.salient_class(given) == "person"
        and lex.gloss_names(given, ("young",))
    ):
        return True  # "a child" is kept by "a young boy"
    if lex.salient_class(given):
        return False  # a cat is not kept by a dog, however close
    if lex.same_stem(given, other) or lex.shares_a_sense(given, other):
        return True
    return lex.lexname(given) not in _RELATIVES_APART and lex.related(given, other)


def unique(findings: list[Finding]) -> list[Finding]:
    seen, out = set(), []
    for f in findings:
        if f.detail not in seen:
            seen.add(f.detail)
            out.append(f)
    return out
