"""Spatial relations of the prompt: kept, lost or swapped.

"a cup to the left of a book", "a cat on top of a washing machine", "a donut
on the bottom of broccoli": the output keeps the relation when a word that
says it stands in a sentence that names one of the related things; left and
right must stay on their sides, and over and under must not only be said the
other way round ("the donut sits on top of the broccoli"), and an output that opens
with the prompt's own words must not put the first thing on another support at once
("Ten children on a couch sit on a small plastic table").
Not here: subjects and their attributes (``assess``, ``attributes``).
"""

from __future__ import annotations

import re

from .assessment import Finding
from .lexicon import Lexicon
from .matching import matches
from .mentions import PICTURE_WORDS, Mention, mentions
from .words import Word, words

__all__ = ["relation_findings"]

# spatial relations: how the prompt says it, and the words that keep it in the output
_RELATIONS = {
    "left": (r"\b(?:to|on|at) the left\b|\bleft of\b", ("left",)),
    "right": (r"\b(?:to|on|at) the right\b|\bright of\b", ("right",)),
    # a relation is kept by its converse too ("under the northern lights": "overhead, the lights")
    "above": (
        r"\babove\b|\bon (?:the )?top of\b",
        ("above", "over", "top", "atop", "below", "beneath", "under"),
    ),
    "below": (
        r"\b(?:below|under|beneath|underneath)\b|\b(?:on|at) the bottom of\b",
        ("below", "under", "beneath", "underneath", "bottom", "above", "overhead", "over"),
    ),
    "behind": (r"\bbehind\b", ("behind", "back")),
    "in front": (r"\bin front of\b", ("front", "before", "ahead")),
    # actions that relate two things: kept by a word anywhere in the output (its sentences often
    # name the holder only as "he" or "she")
    "holding": (
        r"\bhold(?:s|ing)?\b",
        (
            "hold",
            "holds",
            "holding",
            "held",
            "grip",
            "grips",
            "gripping",
            "clutches",
            "clutching",
            "carries",
            "carrying",
            "grasps",
            "grasping",
            "clasps",
            "clasping",
            "cradles",
            "cradling",
            "hand",
            "hands",
            "paw",
            "paws",
            "palm",
            "fingers",
            "lifts",
            "raises",
        ),
    ),
    "hanging": (
        r"\bhang(?:s|ing)?\b(?! out)|\bhung\b",
        (
            "hang",
            "hangs",
            "hanging",
            "hung",
            "dangles",
            "dangling",
            "suspended",
            "swings",
            "swinging",
        ),
    ),
    "beside": (
        r"\bbeside\b|\bnext to\b",
        ("beside", "next", "side", "alongside", "near", "left", "right"),
    ),
}


def relation_findings(
    prompt: str, text: str, source: list[Mention], out_words: list[Word], lex: Lexicon
) -> list[Finding]:
    """Spatial relations of the prompt ("a toilet on the left of a hair drier"): kept when a
    word that says it stands in a sentence of the output that names one of its two ends
    ("a window above" elsewhere keeps nothing); left and right must not change sides."""
    lost, swapped = [], []
    low = prompt.lower()
    sentences = _sentences(text)
    things = [
        m.lemma for m in source if m.lemma not in PICTURE_WORDS
    ]  # not "left" of "on the left of"
    vertical = any(
        re.search(_RELATIONS[name][0], low) for name in _VERTICAL
    )  # "under the table, then left"
    plural = frozenset(m.lemma for m in source if m.many)
    for name, (said, keep) in _RELATIONS.items():
        hit = re.search(said, low)
        if not hit:
            continue
        ends = _relation_ends(hit.start(), source, low)
        if ends and name in ("left", "right") and _swapped(name, ends, sentences, lex):
            swapped.append(name)
        elif ends and name in _VERTICAL and _upside_down(name, ends, sentences, lex):
            swapped.append(name)
        elif (
            ends
            and name in _SIDE_BY_SIDE
            and not vertical
            and _stacked(ends, plural, sentences, lex)
        ):
            swapped.append(name)
        elif not _relation_kept(name, keep, ends, things, sentences, out_words, lex):
            lost.append(name)
    moved = _moved_after_echo(prompt, text, source, lex)
    if moved and moved not in swapped:
        swapped.append(moved)
    out = []
    if lost:
        out.append(
            Finding(
                kind="lost",
                code="lost_relation",
                words=lost,
                detail=f"the output lost the spatial relation ({', '.join(lost)}) of the prompt",
            )
        )
    if swapped:
        out.append(
            Finding(
                kind="contradiction",
                code="relation",
                words=swapped,
                detail=f"the output turns the prompt's relation around ({', '.join(swapped)})",
            )
        )
    return out


# a placing verb right after the output's echo of the prompt: "A turtle on the bottom of a chair
# sits on a smooth, wooden desk", "A rabbit in front of a balloon sits in a red balloon"
_PLACED = re.compile(
    r"[\s,]*(?:sits?|stands?|lies|lie|rests?|perch(?:es)?|(?:is|are) (?:placed|set))\s+"
    r"(on top of|on|upon|atop|inside|in)\b",
    re.I,
)
# a relation right after the prompt's first thing: one that rests it on the other thing, or one
# beside it
_SIDE_WORDS = frozenset(
    [
        "in front of",
        "behind",
        "next to",
        "beside",
        "on the left of",
        "on the right of",
        "to the left of",
        "to the right of",
    ]
)
_ECHO_RELATION = re.compile(
    r"\s(?P<rel>(?:on|to) the (?:left|right) of|on (?:the )?top of|on the bottom of|"
    r"on|atop|upon|in front of|behind|next to|beside)\s"
)


def _moved_after_echo(prompt: str, text: str, source: list[Mention], lex: Lexicon) -> str | None:
    """The relation an output undoes right after opening with the prompt's own words, for a
    prompt of two things related right after the first ("ten children on a couch"): the first
    thing put on another thing than the one the prompt rests it on ("Ten children on a couch sit
    on a small plastic table"), or into the thing it stands beside ("a rabbit in front of a
    balloon sits in a red balloon")."""
    echo = prompt.strip().rstrip(".!").lower()
    things = [m for m in source if not m.modifier and m.lemma not in PICTURE_WORDS]
    related = _ECHO_RELATION.search(echo)
    if len(things) != 2 or related is None or not text.lower().startswith(echo):
        return None
    before = re.findall(r"[a-z]+", echo[: related.start("rel")])
    if not before or lex.noun_lemma(before[-1]) != things[0].lemma:
        return None  # "a man holding a cup on a table": the cup's, not the man's
    placed = _PLACED.match(text, len(echo))
    where = (
        next((m.lemma for m in mentions(words(text[placed.end() :])[:5], lex)), None)
        if placed
        else None
    )
    if where is None:
        return None
    last = things[-1].lemma
    same = where == last or lex.shares_a_sense(
        last, where
    )  # not "desk" for "chair": furniture both
    inside = placed.group(1).lower() in ("in", "inside")  # "sits in a sunny window" may hold both
    side = related.group("rel") in _SIDE_WORDS
    if not side and not same and not inside:
        return "on"
    if side and inside and same:
        return "beside"
    return None


def _sentences(text: str) -> list[list[Word]]:
    """The words of each sentence (or tag list item run) of ``text``."""
    return [ws for ws in (words(part) for part in re.split(r"(?<=[.!?;])\s+|\n+", text)) if ws]


_ACTIONS = frozenset({"holding", "hanging"})


def _relation_kept(
    name: str,
    keep,
    ends: tuple[str, str] | None,
    things: list[str],
    sentences,
    out_words,
    lex: Lexicon,
) -> bool:
    """A word that keeps the relation in a sentence that names one of the prompt's things
    ("a sheep eating flowers from behind a fence": "a pasture stretches behind the sheep")."""
    if name == "above" and ends and _on(ends[1], out_words, lex):
        return True
    holding = [sent for sent in sentences if set(keep) & {w.text for w in sent}]
    if not ends or not holding or name in _ACTIONS:
        return bool(holding)
    return any(_sentence_names(sent, thing, lex) for sent in holding for thing in things)


def _relation_ends(at: int, source: list[Mention], low: str) -> tuple[str, str] | None:
    """The nouns right before and right after a relation found at character ``at`` of the prompt."""
    before = len(re.findall(r"[^\W\d_]+(?:[-'’][^\W\d_]+)*|\d+", low[:at]))
    things = [m for m in source if not m.modifier and m.lemma not in PICTURE_WORDS]
    left = [m for m in things if m.position < before]
    right = [m for m in things if m.position >= before]
    if not left or not right:
        return None
    return left[-1].lemma, right[0].lemma


def _swapped(name: str, ends: tuple[str, str], sentences, lex: Lexicon) -> bool:
    """ "A on the left of B" written with A on the right, and never A on the left."""
    subject = ends[0]
    here = _said_beside(name, ends, sentences, lex)
    there = _said_beside("right" if name == "left" else "left", ends, sentences, lex)
    return subject in there and subject not in here


# the words that put the first of two things over or under the second ("the cup on top of the book")
_VERTICAL = {
    "above": frozenset("above over top atop".split()),
    "below": frozenset("below under beneath underneath bottom".split()),
}


def _upside_down(name: str, ends: tuple[str, str], sentences, lex: Lexicon) -> bool:
    """ "A on the bottom of B" written only the other way: a sentence reading "A ... on top of ...
    B" or "B ... under ... A", and none reading it as the prompt does."""
    other = "below" if name == "above" else "above"
    readings = [reading for sent in sentences for reading in _vertical_readings(sent, ends, lex)]
    agree = {(ends[0], name, ends[1]), (ends[1], other, ends[0])}
    return bool(readings) and not agree & set(readings)


# relations that put two things side by side, never one on the other ("behind" is not one: a
# bird behind a desk shows its head above it)
_SIDE_BY_SIDE = frozenset({"left", "right", "beside"})
# things named only in the plural, which "it" (a pair) or "them" stands for ("the bear rests on top
# of them")
_PRONOUNS_OF = {
    pair: {"it", "them"}
    for pair in """scissors glasses sunglasses goggles binoculars pants trousers
    jeans shorts tongs pliers headphones earphones""".split()
}
_STACKING = frozenset("atop under beneath underneath".split())  # and "top of"; not "above" (taller)


def _stacking_word(sent: list[Word], k: int) -> bool:
    return (
        sent[k].text in _STACKING
        or sent[k].text == "top"
        and k + 1 < len(sent)
        and sent[k + 1].text == "of"
    )


def _stacked(ends: tuple[str, str], plural: frozenset[str], sentences, lex: Lexicon) -> bool:
    """ "A on the right of B" (or beside it) with one of them put on or under the other: "the
    brush rests on top of it" ("it": the other end; "them" for a plural one, "the scissors"),
    "the train passes under the plane"."""
    return any(
        _vertical_readings(sent, ends, lex, stacking=True, plural=plural) for sent in sentences
    )


def _vertical_readings(
    sent: list[Word],
    ends: tuple[str, str],
    lex: Lexicon,
    *,
    stacking: bool = False,
    plural: frozenset[str] = frozenset(),
) -> list[tuple[str, str, str]]:
    """(thing, "above"/"below", thing) for each vertical word of ``sent`` between the nearest
    named ends before and after it. ``stacking``: only words that put one thing on or under
    another, ends named by their own word ("lights" names no microwave), and "it"/"them" after
    the word stands for the end not named before it."""
    named = []
    for k, w in enumerate(sent):
        which = [
            end
            for end in ends
            if (_named_exactly(w, end, lex) if stacking else _names(w, end, lex))
        ]
        if len(which) == 1:  # "rug" names a carpet too: neither end for sure
            named.append((k, which[0]))
    out = []
    for k, w in enumerate(sent):
        side = next((s for s, said in _VERTICAL.items() if w.text in said), None)
        if stacking and not _stacking_word(sent, k):
            continue
        before = [end for j, end in named if j < k]
        after = [end for j, end in named if j > k]
        if stacking and before and not after:
            other = ends[1] if before[-1] == ends[0] else ends[0]
            pronouns = _PRONOUNS_OF.get(
                other, {"them"} if other in plural else {"it"}
            )  # "beneath them": both
            if any(x.text in pronouns for x in sent[k + 1 : k + 4]):
                after = [other]
        if side and before and after and before[-1] != after[0]:
            out.append((before[-1], side, after[0]))
    return out


def _said_beside(side: str, ends: tuple[str, str], sentences, lex: Lexicon) -> set[str]:
    """Which of ``ends`` share a sentence with the word ``side``."""
    return {
        end
        for sent in sentences
        if side in {w.text for w in sent}
        for end in ends
        if _sentence_names(sent, end, lex)
    }


def _sentence_names(sent: list[Word], end: str, lex: Lexicon) -> bool:
    return any(_names(w, end, lex) for w in sent)


def _named_exactly(w: Word, end: str, lex: Lexicon) -> bool:
    return w.text in (end, end + "s", end + "es") or lex.noun_lemma(w.text) == end


def _names(w: Word, end: str, lex: Lexicon) -> bool:
    return w.text in (end, end + "s", end + "es") or matches(
        end, lex.noun_lemma(w.text) or w.text, lex
    )


def _on(obj: str, out_words: list[Word], lex: Lexicon) -> bool:
    """ "perched on the washing machine" keeps "on top of the washing machine"."""
    for k, w in enumerate(out_words):
        if w.text in ("on", "onto", "upon", "atop"):
            for nxt in out_words[k + 1 : k + 5]:
                if nxt.phrase != w.phrase:
                    break
                noun = lex.noun_lemma(nxt.text)
                if noun and (noun == obj or lex.licenses(obj, noun)):
                    return True
    return False
