"""The prompt's animal or child turned into something else: "the chicken is a fawn", a boy with a
beard.

- ``kind``: the output says the prompt's animal *is* another animal ("the chicken
  is a fawn, plump and playful"); a more specific or more general animal is the
  same one ("the dog is a golden retriever", "the kitten is a young cat").
- ``age``: the prompt's people are children only ("a boy and a tiger", no man,
  woman, parent or other adult) and the
  output gives someone an adult's face or years ("a small silver beard", "in
  their early twenties").
Not here: subjects lost or added (``assess``), colours and counts (``attributes``).
"""

from __future__ import annotations

import re

from .assessment import Finding
from .lexicon import Lexicon
from .matching import matches
from .mentions import Mention
from .words import Word

__all__ = ["kind_findings"]

_CHILDREN = frozenset(
    "boy boys girl girls child children kid kids baby babies toddler toddlers schoolboy "
    "schoolgirl schoolchildren infant".split()
)
_ADULT_SIGNS = re.compile(
    r"\b(?:beard(?:ed)?|moustache|mustache|stubble|wrinkled|wrinkles|middle-aged|elderly|"
    r"grey-haired|gray-haired|in (?:his|her|their) (?:early |late |mid-?)?"
    r"(?:twenties|thirties|forties|fifties|sixties|seventies|eighties))\b",
    re.I,
)
# people who may wear the beard ("a man and his son")
_ADULTS = frozenset(
    "man woman person people adult guy lady gentleman father mother dad mom parent "
    "grandfather grandmother grandpa grandma teacher".split()
)
# animals WordNet files first as food
_FOOD_ANIMALS = frozenset(
    "chicken turkey duck goose lamb fish salmon trout crab lobster shrimp octopus squid".split()
)
_IS = frozenset("is are".split())
_ARTICLES = frozenset("a an".split())


def kind_findings(
    prompt: str,
    text: str,
    source: list[Mention],
    output: list[Mention],
    out_words: list[Word],
    lex: Lexicon,
) -> list[Finding]:
    """``kind`` and ``age`` contradictions (see the module docstring)."""
    return _kind_changes(source, output, out_words, lex) + _aged_children(prompt, text, source, lex)


def _aged_children(prompt: str, text: str, source: list[Mention], lex: Lexicon) -> list[Finding]:
    """Children only in the prompt, an adult's beard or years in the output."""
    grown = [m.lemma for m in source if m.lemma in _ADULTS or lex.more_general("adult", m.lemma)]
    children = {w for w in re.findall(r"[a-z]+", prompt.lower()) if w in _CHILDREN}
    adult = _ADULT_SIGNS.search(text)
    if not children or not adult or grown or _ADULT_SIGNS.search(prompt):
        return []
    return [
        Finding(
            kind="contradiction",
            code="age",
            words=sorted(children),
            detail=f"the prompt's {', '.join(sorted(children))} gets an adult's "
            f'"{adult.group(0)}"',
        )
    ]


def _kind_changes(
    source: list[Mention], output: list[Mention], out_words: list[Word], lex: Lexicon
) -> list[Finding]:
    """ "<the prompt's animal> is a <another animal>" (the output's mentions of it, then "is a")."""
    animals = {
        m.lemma
        for m in source
        if not m.depicted and (lex.salient_class(m.lemma) == "animal" or m.lemma in _FOOD_ANIMALS)
    }
    found = []
    for o in output:
        i = o.position
        if (
            o.lemma not in animals
            or i + 3 >= len(out_words)
            or out_words[i + 1].text not in _IS
            or out_words[i + 2].text not in _ARTICLES
        ):
            continue
        other = _predicate_noun(out_words, i + 3, lex)
        if other and lex.salient_class(other) == "animal" and not _same_animal(o.lemma, other, lex):
            found.append(
                Finding(
                    kind="contradiction",
                    code="kind",
                    words=[o.lemma, other],
                    detail=f"the output says the prompt's {o.lemma} is a {other}",
                )
            )
    return found


def _predicate_noun(ws: list[Word], start: int, lex: Lexicon) -> str | None:
    """The first noun after "is a" in its phrase, over describing words ("a plump fawn")."""
    for w in ws[start : start + 4]:
        if w.phrase != ws[start].phrase:
            return None
        noun = lex.noun_lemma(w.text)
        if noun and lex.is_noun(noun) and lex.lexname(noun) in ("noun.animal", "noun.person"):
            return noun
    return None


def _same_animal(a: str, b: str, lex: Lexicon) -> bool:
    return (
        matches(a, b, lex) or matches(b, a, lex) or lex.more_general(a, b) or lex.more_general(b, a)
    )
