"""Shape, size, texture, age and state the prompt gives a thing, said the other way round.

"a pentagonal pizza box" -> "a rectangular box", "a tall tree" -> "the short
tree", "a rough stone" -> "the stone is smooth", "the textured cube" -> "the cube
has an even smooth texture", "an old man" -> "the young man": the output names
the prompt's thing again and gives it a word of an opposite class. Only words
right before the noun (in its phrase), after "is"/"looks" or before "texture",
"surface", "finish" count, and a thing the prompt names twice ("a big dog and a
small dog") is not judged. A shape the prompt gives a thing ("a triangular chain
necklace") that no word of the output says ("triangle-shaped" does) is lost.
Not here: colours, counts and materials (``attributes``).
"""

from __future__ import annotations

from .assessment import Finding
from .matching import unique
from .mentions import Mention
from .words import Word

__all__ = ["opposite_findings"]

# word -> its class; two classes in ``_OPPOSED`` contradict each other
_CLASSES = {
    name: frozenset(words.split())
    for name, words in {
        "round": "round circular spherical oval cylindrical",
        "square": "square cubic",
        "rectangular": "rectangular oblong boxy",
        "triangular": "triangular",
        "pentagonal": "pentagonal",
        "hexagonal": "hexagonal",
        "octagonal": "octagonal",
        "big": "big large huge giant enormous massive oversized",
        "small": "small tiny little miniature mini",
        "tall": "tall",
        "long": "long",
        "short": "short",
        "thick": "thick",
        "thin": "thin",
        "wide": "wide broad",
        "narrow": "narrow",
        "rough": "rough coarse textured rugged bumpy gritty",
        "smooth": "smooth polished sleek glossy silky",
        "soft": "soft fluffy plush",
        "hard": "hard rigid",
        "wet": "wet damp soaked",
        "dry": "dry",
        "old": "old elderly ancient aged antique",
        "young": "young new brand-new modern",
        "open": "open",
        "closed": "closed shut",
        "empty": "empty",
        "full": "full filled",
        "broken": "broken cracked shattered",
        "intact": "intact unbroken",
    }.items()
}
_SHAPES = ("round", "square", "rectangular", "triangular", "pentagonal", "hexagonal", "octagonal")
_OPPOSED = {
    frozenset(pair)
    for pair in [
        *((a, b) for a in _SHAPES for b in _SHAPES if a < b),
        ("big", "small"),
        ("tall", "short"),
        ("long", "short"),
        ("thick", "thin"),
        ("wide", "narrow"),
        ("rough", "smooth"),
        ("soft", "hard"),
        ("wet", "dry"),
        ("old", "young"),
        ("open", "closed"),
        ("empty", "full"),
        ("broken", "intact"),
    ]
}
_CLASS_OF = {word: name for name, members in _CLASSES.items() for word in members}
_LINKS = frozenset("is are looks look appears appear seems seem".split())
_SURFACES = frozenset("texture surface finish skin shape".split())
_SKIPPED = frozenset("a an the very quite slightly rather so and even".split())


def opposite_findings(
    source: list[Mention], output: list[Mention], src_words: list[Word], out_words: list[Word]
) -> list[Finding]:
    """A ``contradiction`` for each prompt thing whose shape, size, texture, age or state the
    output states in an opposite class."""
    found = []
    for m in source:
        if m.modifier or m.depicted or sum(s.lemma == m.lemma for s in source) > 1:
            continue
        given = _before(src_words, m.position)
        if not given:
            continue
        for o in output:
            if o.lemma != m.lemma or o.modifier:
                continue
            said = _before(out_words, o.position) | _after(out_words, o.position)
            clash = sorted(c for c in said for g in given if frozenset((c, g)) in _OPPOSED)
            if clash:
                found.append(
                    Finding(
                        kind="contradiction",
                        code="opposite",
                        words=[m.lemma, *clash],
                        detail=f'the output makes "{m.lemma}" {", ".join(clash)} '
                        f"(the prompt: {', '.join(sorted(given))})",
                    )
                )
                break
    return unique(found + _lost_shapes(source, src_words, out_words))


# the words that say each shape anywhere in a text ("triangle-shaped", "a hexagon")
_SHAPE_SAID = {
    "round": "circle circles sphere spheres disc disk ring ball-shaped",
    "square": "squares cube cubes",
    "rectangular": "rectangle rectangles box-shaped",
    "triangular": "triangle triangles triangle-shaped",
    "pentagonal": "pentagon pentagons pentagon-shaped",
    "hexagonal": "hexagon hexagons hexagon-shaped honeycomb",
    "octagonal": "octagon octagons octagon-shaped",
}


def _lost_shapes(
    source: list[Mention], src_words: list[Word], out_words: list[Word]
) -> list[Finding]:
    """A ``lost_shape`` for each shape the prompt gives a thing ("a triangular chain necklace")
    that no word of the output says."""
    said = {w.text for w in out_words}
    lost = []
    for m in source:
        for shape in sorted(_before(src_words, m.position) & set(_SHAPES)):
            if not said & (_CLASSES[shape] | set(_SHAPE_SAID[shape].split())):
                lost.append(
                    Finding(
                        kind="lost",
                        code="lost_shape",
                        words=[m.lemma, shape],
                        detail=f'the output lost the shape of "{m.lemma}" ({shape})',
                    )
                )
    return lost


def _before(ws: list[Word], position: int) -> set[str]:
    """Classes of the words right before the noun, in its phrase ("a tall, thin" stops at the
    comma)."""
    out = set()
    for j in range(position - 1, max(-1, position - 4), -1):
        if ws[j].phrase != ws[position].phrase or ws[j].text in ("of", "with", "and", "on", "in"):
            break
        if ws[j].text in _CLASS_OF:
            out.add(_CLASS_OF[ws[j].text])
    return out


def _after(ws: list[Word], position: int) -> set[str]:
    """Classes said of the noun after it: "the box is rectangular", "the cube has an even smooth
    texture", "the table looks polished"."""
    nxt = position + 1
    if nxt >= len(ws) or ws[nxt].phrase != ws[position].phrase:
        return set()
    if ws[nxt].text in _LINKS:
        run = _run(ws, nxt + 1, position)
        return {_CLASS_OF[w] for w in run if w in _CLASS_OF}
    if ws[nxt].text in ("has", "have"):
        run = _run(ws, nxt + 1, position)
        end = nxt + 1 + len(run)
        if end < len(ws) and ws[end].text in _SURFACES and ws[end].phrase == ws[position].phrase:
            return {_CLASS_OF[w] for w in run if w in _CLASS_OF}
    return set()


def _run(ws: list[Word], start: int, position: int) -> list[str]:
    """The describing words from ``start`` on, in the noun's phrase."""
    run = []
    for w in ws[start : start + 4]:
        if w.phrase != ws[position].phrase or not (w.text in _CLASS_OF or w.text in _SKIPPED):
            break
        run.append(w.text)
    return run
