"""Attributes the prompt gives its subjects: colours, counts and materials.

Lost ("a red car" -> "a car"), contradicted ("silver hair" -> "dark hair",
"a blue backpack" -> "the backpack is white",
"three apples" -> "a single apple", "a wooden sailboat" -> "a fiberglass
sailboat"), and the same against the caption of an input image ("the red
convertible" the image shows, called blue). Not here: whether the subjects
themselves are kept (``assess``), spatial relations (``relations``).
"""

from __future__ import annotations

import re

from .assessment import Finding
from .lexicon import Lexicon
from .matching import matches, unique
from .materials import is_material, same_material
from .mentions import Mention, mentions
from .words import Word, color_of, describes, shades_next, words

__all__ = ["attribute_findings", "caption_contradictions"]

# colour families that describe the same colour
_SAME_COLOR = [
    {"grey", "silver"},
    {"silver", "white"},
    {"yellow", "gold"},
    {"dark", "black"},
    {"dark", "brown"},
    {"red", "pink"},
    {"purple", "pink"},
    {"orange", "yellow"},
    {"red", "orange"},
]


def _same_family(a: set[str], b: set[str]) -> bool:
    if a & b:
        return True
    return any(x in group and y in group for group in _SAME_COLOR for x in a for y in b)


def attribute_findings(source, output, src_words, out_words, lex) -> list[Finding]:
    """Colours and counts of the prompt's nouns: kept, or contradicted."""
    findings: list[Finding] = []
    hues = {
        color_of(w.text, lex) for i, w in enumerate(out_words) if not shades_next(out_words, i, lex)
    } - {None}
    # "dark blue" keeps a prompt's "dark" ("dark water"), not its "black" ("a black car")
    shades = hues | (
        {"dark"} if any(shades_next(out_words, i, lex) for i in range(len(out_words))) else set()
    )
    for m in source:
        same = [o for o in output if o.lemma == m.lemma or matches(m.lemma, o.lemma, lex)]
        if m.colors:
            findings += _color_findings(
                m, source, output, same, src_words, out_words, hues, shades, lex
            )
        given = frozenset().union(*(s.materials for s in source if s.lemma == m.lemma))
        findings += _material_findings(m, same, out_words, given)
        if (
            given and sum(s.lemma == m.lemma for s in source) == 1
        ):  # "the leather jacket is a wool jacket"
            findings += _restated_material(m, given, output, out_words, lex)
        if m.count is not None:  # "a zebra and a giraffe ... two animals" counts both
            counts = {
                o.count
                for o in same
                if o.count is not None and not lex.more_general(o.lemma, m.lemma)
            }
            if counts and m.count not in counts and not (m.count == 1 and counts <= {1}):
                findings.append(_contradiction("count", m, sorted(counts)))
            elif not counts and m.count > 1 and any(o.vague for o in same):
                findings.append(
                    Finding(
                        kind="lost",
                        code="lost_count",
                        words=[m.lemma],
                        detail=f'the output lost the count of "{m.lemma}" ({m.count}: '
                        f"only a vague quantity is left)",
                    )
                )
    return unique(findings)


def _color_findings(
    m: Mention,
    source,
    output,
    same,
    src_words,
    out_words,
    hues: set[str],
    shades: set[str],
    lex: Lexicon,
) -> list[Finding]:
    """The colours the prompt gives ``m``'s noun: kept (by the hues of the text: ``hues``; a
    prompt's "dark" by any dark word: ``shades``), restated in another colour, or lost."""
    # every colour the prompt gives this noun ("a red apple and a green apple": both)
    given = set().union(*(s.colors for s in source if s.lemma == m.lemma))
    if given == {"dark"}:  # a brightness, not a hue: "dark water" -> "dark blue water"
        return [] if _same_family(given, shades) else [_lost_color(m)]
    stated = [o.colors for o in same if o.colors]
    # the same noun said again in a plain colour word: "silver hair ... her dark hair"
    # ... or by a synonym that names no other thing of the prompt: "a yellow flower ... the pink
    # blossom"
    again = [
        o
        for o in output
        if not o.modifier and (o.lemma == m.lemma or _synonym(m.lemma, o.lemma, source, lex))
    ]
    restated = [
        _plain_colors(out_words, o.position, lex)
        for o in again
        if not _before_noun(out_words, o.position, lex)
    ]
    restated += [
        _predicated_colors(out_words, o.position, lex)
        | _covering_colors(out_words, o.position, lex)
        for o in again
    ]  # "is white", "has yellow skin"
    restated += [
        _possessed_covering_colors(out_words, o.position, lex) for o in output if o.lemma == m.lemma
    ]  # "the cat's fur is grey"
    plain_given = set().union(
        *(_plain_colors(src_words, s.position, lex) for s in source if s.lemma == m.lemma)
    )
    one = sum(s.lemma == m.lemma for s in source) == 1  # "a brown bin with a green bin": which?
    if one:
        restated += _its_covering_colors(
            m, source, output, again, out_words, lex
        )  # "Its feathers are grey."
    clashing = [c for c in restated if c and one and plain_given and not _same_family(given, c)]
    stated_families = set().union(*stated) if stated else set()
    if clashing:  # one restatement in another colour is enough: "silver hair ... dark hair"
        return [_contradiction("color", m, sorted(clashing[0]))]
    if (
        one
        and stated
        and plain_given
        and not _same_family(given, stated_families)
        and not _same_family(given, hues)
    ):
        return [_contradiction("color", m, sorted(stated_families))]  # "a chestnut horse"
    if not stated and not _same_family(set(m.colors), hues):
        return [_lost_color(m)]
    return []


def _synonym(lemma: str, other: str, source: list[Mention], lex: Lexicon) -> bool:
    """``other`` shares a sense with ``lemma`` and names no other thing of the prompt."""
    return (
        other != lemma
        and lex.shares_a_sense(lemma, other)
        and all(s.lemma != other for s in source)
    )


def _material_findings(
    m: Mention, same: list[Mention], out_words: list[Word], given: frozenset[str] | None = None
) -> list[Finding]:
    """A material the prompt gives a noun ("a wooden sailboat"): said again in another material
    (contradiction) or nowhere in the output (lost). ``given``: every material the prompt gives
    that noun ("the glass door turned into a metal door": either keeps it)."""
    given = given or m.materials
    if not given or not same:
        return []
    if any(same_material(g, w.text) for g in given for w in out_words):
        return []
    stated = set().union(
        *(o.materials for o in same if not o.modifier)
    )  # "an iron street lamp": the lamp's
    if stated:
        return [_contradiction("material", m, sorted(stated))]
    return [
        Finding(
            kind="lost",
            code="lost_material",
            words=[m.lemma, *sorted(given)],
            detail=f'the output lost the material of "{m.lemma}" ({", ".join(sorted(given))})',
        )
    ]


def _restated_material(
    m: Mention, given: frozenset[str], output: list[Mention], out_words, lex: Lexicon
) -> list[Finding]:
    """The prompt's one "leather jacket" said to be of another material where the output says
    what it is ("the leather jacket is a dark grey wool jacket", "its collar is made of soft
    cotton") or names it again ("the metallic books ... the glass books"), even when the
    prompt's material is said elsewhere (an opening echo of the prompt)."""
    for o in output:
        if o.lemma == m.lemma and not o.modifier:
            said = _predicated_materials(out_words, o.position, lex) or (
                set() if m.modifier else o.materials
            )  # "a metallic desk lamp": the lamp's
            if said and not any(same_material(g, w) for g in given for w in said):
                return [_contradiction("material", m, sorted(said))]
    return []


def _predicated_materials(ws, position: int, lex: Lexicon) -> set[str]:
    """Material words after "is"/"are" (and "made of") in the noun's phrase: "is a small ceramic
    cup", "is made of soft cotton", "is another glossy metal cup" (a word the lexicon knows as a
    noun may describe: "glossy")."""
    if (
        position + 1 >= len(ws)
        or ws[position + 1].text not in ("is", "are")
        or ws[position + 1].phrase != ws[position].phrase
    ):
        return set()
    out = set()
    for w in ws[position + 2 : position + 8]:
        if w.phrase != ws[position].phrase or out:  # the first material word is the one said
            break
        if is_material(w.text):
            out.add(w.text)
        elif (
            w.text not in _MADE_OF
            and not describes(w.text, lex, compound=True)
            and w.text not in _PLAIN_COLORS
        ):
            break  # "is near a stone wall": the wall's
    return out


_MADE_OF = frozenset("made of from a an another entirely mostly all".split())


def caption_contradictions(
    context: str, source: list[Mention], text: str, lex: Lexicon, *, edit: bool
) -> list[Finding]:
    """The image's caption says "a red convertible", "three balloons", "a marble statue"; the
    text restates that noun in another colour, count or material. An edit (``edit``) is judged
    only where it says what to keep ("keep the white cat": the cat is black; "keep the lone
    deer": there are two) and never on the nouns it names (it may change them)."""
    named = {m.lemma for m in source} if edit else set()
    sentences = [
        sent for sent in re.split(r"(?<=[.!?;])\s+", text) if not edit or _KEEPING.search(sent)
    ]
    out_words = words(" ".join(sentences))
    output = mentions(out_words, lex)
    found = []
    for c in mentions(words(context), lex):
        if c.lemma in named or any(matches(n, c.lemma, lex) for n in named):
            continue
        same = [o for o in output if o.lemma == c.lemma or lex.licenses(c.lemma, o.lemma)]
        colors = [o.colors for o in same if o.colors]
        colors += [said for o in same if (said := _predicated_colors(out_words, o.position, lex))]
        if c.colors and colors and not any(_same_family(set(c.colors), set(o)) for o in colors):
            found.append(_contradiction("color", c, sorted(set().union(*colors))))
        counts = {o.count for o in same if o.count is not None}
        if (
            c.count and c.count > 1 and counts and c.count not in counts
        ):  # "keep the lone deer": two
            found.append(_contradiction("count", c, sorted(counts)))
        found += [f for f in _material_findings(c, same, out_words) if f.kind == "contradiction"]
    return unique(found)


# the sentences of an edit instruction that say what stays as it is
_KEEPING = re.compile(
    r"\b(?:keep|keeps|keeping|leave|leaving|unchanged|untouched|as (?:it|they) (?:is|are)|"
    r"preserve|preserving|intact|the same)\b",
    re.I,
)


# colour words that say nothing else (not "wine", "copper", "emerald": those name things too)
_PLAIN_COLORS = frozenset(
    """red orange yellow green blue purple violet pink brown black white grey gray silver
    gold golden blond blonde dark""".split()
)


def _plain_colors(ws, position: int, lex: Lexicon) -> set[str]:
    """Colour families of the plain colour words right before a noun ("her dark hair"), in its
    phrase."""
    out = set()
    for i in range(position - 1, max(0, position - 3) - 1, -1):
        w = ws[i]
        if w.phrase != ws[position].phrase or w.text in ("a", "an", "the", "and", "of", "with"):
            break
        if w.text in _PLAIN_COLORS and not shades_next(ws, i, lex):
            out.add(color_of(w.text, lex))
    return out - {None}


# after "is"/"are", words that may stand before the colour the noun is given: "is a sleek black
# wagon", "is painted in red and white", "are mostly grey"
_PREDICATE_FILLERS = frozenset(
    "a an all mostly entirely mainly painted coloured colored in".split()
)


def _predicated_colors(ws, position: int, lex: Lexicon) -> set[str]:
    """Colour families the text predicates of the noun at ``position``: "the backpack is white",
    "the tire is painted in red and white", "the train is a sleek black wagon", "the sky in a
    deep blue" (plain colour words after "is"/"are"/"in" in its phrase, before any other noun)."""
    if (
        position + 1 >= len(ws)
        or ws[position + 1].text not in ("is", "are", "in")
        or ws[position + 1].phrase != ws[position].phrase
    ):
        return set()
    out: set[str] = set()
    for i in range(position + 2, min(len(ws), position + 8)):
        w = ws[i]
        if w.phrase != ws[position].phrase:
            break
        if w.text in _PLAIN_COLORS and not shades_next(ws, i, lex):
            out.add(color_of(w.text, lex))
        elif (
            w.text == "and"
            and out
            or w.text in _PREDICATE_FILLERS
            or (not out and describes(w.text, lex))
        ):
            continue
        else:
            # "the sky in deep blue" is the sky's colour; "the cat in red boots" is the boots'
            return (
                set() if ws[position + 1].text == "in" and lex.noun_lemma(w.text) else out - {None}
            )
    return out - {None}


# what covers a thing and so gives it its colour: "the banana has pale yellow skin"
_COVERINGS = frozenset(
    """skin fur coat peel shell feathers plumage paint paintwork finish body hide scales
    bark rind glaze icing frosting""".split()
)


def _covering_colors(ws, position: int, lex: Lexicon) -> set[str]:
    """Colour families of the noun's covering: "the banana has pale yellow skin", "the car,
    with glossy red paintwork" (plain colour words between "has"/"with" and a covering word)."""
    nxt = position + 1
    if (
        nxt >= len(ws)
        or ws[nxt].text not in ("has", "have", "with")
        or ws[nxt].phrase != ws[position].phrase
    ):
        return set()
    return _colors_up_to(ws, nxt + 1, 5, _COVERINGS, lex)


def _colors_up_to(ws, start: int, limit: int, ends: frozenset[str], lex: Lexicon) -> set[str]:
    """Colour families of the plain colour words from ``start`` to a word in ``ends`` (within
    ``limit`` words, in one phrase); empty when any other kind of word comes first."""
    out: set[str] = set()
    for i in range(start, min(len(ws), start + limit)):
        w = ws[i]
        if w.phrase != ws[start - 1].phrase:
            return set()
        if w.text in ends:
            return out - {None}
        if w.text in _PLAIN_COLORS and not shades_next(ws, i, lex):
            out.add(color_of(w.text, lex))
        elif not (w.text in ("a", "an", "and") or describes(w.text, lex)):
            return set()
    return set()


# what covers an animal: "its fur" said after the prompt's only animal is that animal's fur
_ANIMAL_COVERINGS = frozenset("fur coat feathers plumage hide scales mane pelt".split())
_COLOR_NOUNS = frozenset("color colour hue shade tone".split())


def _possessed_covering_colors(ws, position: int, lex: Lexicon) -> set[str]:
    """Colour families of the covering the noun owns: "the cat's grey fur", "the car's paint is
    blue"."""
    if not ws[position].raw.lower().endswith(("'s", "’s")):
        return set()
    covering = _covering_after(ws, position, _COVERINGS, lex)
    return set() if covering is None else _colors_of_covering(ws, covering, lex)


def _its_covering_colors(m: Mention, source, output, again, ws, lex: Lexicon) -> list[set[str]]:
    """Colour families of "its <covering>" where ``m`` is the prompt's only animal, named in the
    output before the pronoun and no other animal between ("A white cat sits on a sill. Its fur
    is grey.")."""
    if lex.salient_class(m.lemma) != "animal" or any(
        s.lemma != m.lemma and lex.salient_class(s.lemma) == "animal" for s in source
    ):
        return []
    kept = {o.position for o in again}
    others = [
        o.position
        for o in output
        if o.position not in kept and lex.salient_class(o.lemma) == "animal"
    ]
    end = min(others, default=len(ws))
    found = []
    for i in range(min(kept, default=end), end):
        covering = _covering_after(ws, i, _ANIMAL_COVERINGS, lex) if ws[i].text == "its" else None
        if covering is not None:
            found.append(_colors_of_covering(ws, covering, lex))
    return found


def _covering_after(ws, position: int, coverings: frozenset[str], lex: Lexicon) -> int | None:
    """Index of a covering word right after ``position`` in its phrase, past colours and other
    describing words ("its soft grey fur"), or None."""
    for i in range(position + 1, min(len(ws), position + 5)):
        w = ws[i]
        if w.phrase != ws[position].phrase:
            return None
        if w.text in coverings:
            return i
        if not (w.text in _PLAIN_COLORS or w.text == "and" or describes(w.text, lex)):
            return None
    return None


def _colors_of_covering(ws, covering: int, lex: Lexicon) -> set[str]:
    """The covering's colours: before it ("grey fur"), said of it ("fur is grey") or in
    apposition ("its coat a soft gold color")."""
    return (
        _plain_colors(ws, covering, lex)
        | _predicated_colors(ws, covering, lex)
        | _apposed_colors(ws, covering, lex)
    )


def _apposed_colors(ws, position: int, lex: Lexicon) -> set[str]:
    """ "coat a soft gold color": plain colours between "a" and a colour noun right after the
    noun."""
    nxt = position + 1
    if nxt >= len(ws) or ws[nxt].text not in ("a", "an") or ws[nxt].phrase != ws[position].phrase:
        return set()
    return _colors_up_to(ws, nxt + 1, 4, _COLOR_NOUNS, lex)


def _before_noun(ws, position: int, lex: Lexicon) -> bool:
    """The next word may be the head noun: "a white cake stand" describes the stand, not a cake
    ("the blue car gleams": a verb in -s follows, the car is the head)."""
    nxt = ws[position + 1] if position + 1 < len(ws) else None
    if not nxt or nxt.phrase != ws[position].phrase:
        return False
    if not lex.noun_lemma(nxt.text) or nxt.text in _FUNCTION_WORDS:
        return False
    return not (nxt.text.endswith("s") and lex.verb_lemma(nxt.text))


_FUNCTION_WORDS = frozenset("is are was were has have and or with in on at of to".split())


def _lost_color(m: Mention) -> Finding:
    return Finding(
        kind="lost",
        code="lost_color",
        words=[m.lemma, *sorted(m.colors)],
        detail=f'the output lost the colour of "{m.lemma}" ({", ".join(sorted(m.colors))})',
    )


def _contradiction(what: str, m: Mention, got) -> Finding:
    want = {"color": sorted(m.colors), "material": sorted(m.materials)}.get(what, [m.count])
    return Finding(
        kind="contradiction",
        code=what,
        words=[m.lemma],
        detail=f'the output changes the {what} of "{m.lemma}" ({want} -> {got})',
    )
