"""The medium the prompt asks for: a painting or a sketch stays one, not a photograph or a
3D rendering, and a cartoon or a surrealist picture is not called realistic.

"a sketch of a train", "an oil painting of a fox", "..., anime style" ask
for a drawn or painted picture; a small model's habit of ending every prompt
with "realistic photograph" turns it into a photo, and the generator follows
the last word. A medium word names the picture only where it opens the
prompt or a comma's part, or follows "in"/"as" ("a box with a drawing of an
elephant on it", "a wall with a framed watercolor": things in a photo). In
the output a photo word is a claim unless a thing is meant: "a framed photo
on the wall", "A photo hangs" (a determiner before it, and no "of" after a
sentence-opening one: "A photo of a fox" is a claim). Not here: edits (their
instructions name the input's medium: "turn the photo into a watercolor"),
the reverse (a photo drawn: photos of paintings are common subjects), styles
that name no medium ("cyberpunk", "in the style of Monet"), camera moves
(``camera``).
"""

from __future__ import annotations

import re

from .assessment import Finding

__all__ = [
    "PHOTO_WORDS",
    "REALISTIC_WORDS",
    "asks_drawn_medium",
    "asks_stylized",
    "medium_findings",
]

#: word forms that make a picture a photograph: what a drawn medium's output may not start to write
PHOTO_WORDS = frozenset(
    """photo photos photograph photographs photography photographic photorealistic
    photoreal photorealism""".split()
)

_ART = (
    r"paintings?|sketch(?:es)?|drawings?|illustrations?|watercolou?rs?|cartoons?|caricatures?|doodles?|"
    r"lithographs?|engravings?|woodcuts?|linocuts?|etchings?|murals?|frescos?|frescoes"
)
# how a prompt asks for a drawn or painted picture
_DRAWN = re.compile(
    rf"\b(?:{_ART}) of\b|"
    r"\b(?:oil|acrylic|watercolou?r|ink|pencil|charcoal|crayon|pastel|gouache|digital)[ -]"
    r"(?:painting|drawing|sketch|illustration|art)\b|\bink[ -]wash\b|"
    r"\b(?:anime|manga|cartoon|pixel[ -]art|ukiyo-?e|line[ -]art|concept[ -]art|digital[ -]art|"
    r"vector[ -]art|clip[ -]?art|comic[ -](?:book[ -])?style|watercolou?r|oil on canvas)\b",
    re.I,
)
_PHOTO_PROMPT = re.compile(
    r"\b(?:photo|photos|photograph|photographs|photography|photographic|photorealistic|"
    r"photoreal|dslr|polaroid|snapshot)\b",
    re.I,
)
# a photo word in the output
_PHOTO = re.compile(r"\b(?:" + "|".join(sorted(PHOTO_WORDS, key=len, reverse=True)) + r")\b", re.I)
# words before a photo word that make it a thing in the picture ("a framed photo", "her photos")
_THING = frozenset(
    """a an the this that these those his her their its my our your some several framed old
    family faded hanging""".split()
)
# words before a prompt's medium word that make it a thing in the picture ("a box with a drawing")
_HOLDER = frozenset("""with has have of on framed hanging printed wall its his her their""".split())


# another medium than a drawn one, wherever the output says it: "realistic 3D rendering" of a
# charcoal sketch
_RENDER = re.compile(
    r"\b3d[ -]render(?:ing|ed|s)?\b|\bcgi\b|\bunreal engine\b|\boctane render\b", re.I
)
# styles that a realistic picture is not: "a cartoon of a train" -> "realistic landscape look"
_STYLIZED = re.compile(
    r"\b(?:cartoons?|anime|manga|pixel[ -]art|comic[ -](?:book[ -])?style|chibi|"
    r"surreal(?:ism|ist)?)\b",
    re.I,
)
#: words that call a picture realistic: what a stylized picture's output may not start to write
REALISTIC_WORDS = frozenset(
    "realistic realism photorealistic photorealism lifelike documentary".split()
)
_REALISTIC = re.compile(
    r"\b(?:" + "|".join(sorted(REALISTIC_WORDS, key=len, reverse=True)) + r"|true-to-life)\b", re.I
)


def asks_drawn_medium(prompt: str) -> bool:
    """The prompt asks for a drawn or painted picture (not a thing in one) and never for a photo."""
    return not _PHOTO_PROMPT.search(prompt) and any(
        _names_the_picture(prompt[: hit.start()]) for hit in _DRAWN.finditer(prompt)
    )


def _names_the_picture(before: str) -> bool:
    """A medium word after ``before`` names the picture: it opens the prompt or a part of it
    (at most three words before it, none that makes it a thing), or follows "in"/"as"/"like"."""
    part = re.split(r"[,.;:]", before)[-1].lower().split()
    return (
        (len(part) <= 3 and not set(part) & _HOLDER)
        or bool(part)
        and part[-1] in ("in", "as", "like")
    )


def asks_stylized(prompt: str) -> bool:
    """The prompt asks for a picture in a style no realistic picture has ("a cartoon of a train",
    "..., surrealism style", "anime"), not for a thing in one ("a box with a cartoon on it"), and
    never for a realistic one or a photo ("a realistic cartoon", "a surreal photo")."""
    if _REALISTIC.search(prompt) or _PHOTO_PROMPT.search(
        prompt
    ):  # "a surreal photo of a melting clock"
        return False
    return any(
        _names_the_picture(prompt[: hit.start()])
        or re.match(r"[ -]style\b", prompt[hit.end() :], re.I)
        for hit in _STYLIZED.finditer(prompt)
    )


def medium_findings(prompt: str, text: str) -> list[Finding]:
    """A ``medium`` contradiction: the prompt asks for a drawn picture and the output calls it a
    photo or a 3D rendering, or for a stylized one that the output calls realistic."""
    claim, asked = None, "a drawn or painted picture"
    if asks_drawn_medium(prompt):
        claim = _photo_claim(text) or (
            render.group(0) if (render := _RENDER.search(text)) else None
        )
    if claim is None and asks_stylized(prompt):
        claim, asked = (
            (real.group(0) if (real := _REALISTIC.search(text)) else None),
            "a stylized picture",
        )
    if claim is None:
        return []
    return [
        Finding(
            kind="contradiction",
            code="medium",
            words=[claim.lower()],
            detail=f'the prompt asks for {asked}; the output calls it "{claim}"',
        )
    ]


def _photo_claim(text: str) -> str | None:
    """The first photo word of ``text`` that says what the picture is (not a thing in it)."""
    for hit in _PHOTO.finditer(text):
        before = text[: hit.start()]
        previous = re.findall(r"[\w'-]+", before[-40:].lower())
        titled = (
            bool(re.search(r"(?:^|[.!?;:\n])\s*\w+\s+$", before))
            and re.match(r"\s+of\b", text[hit.end() :]) is not None
        )  # "A photo of a fox"
        if previous and previous[-1] in _THING and not titled:
            continue  # "a framed photo on the wall", "A photo hangs", "her photos"
        return hit.group(0)
    return None
