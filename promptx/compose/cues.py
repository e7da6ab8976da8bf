"""What a prompt already says, read from its words with the cue lists of
templates/phrases/cues.toml.

The scene (underwater, night, indoors, ...), the medium family it asks for,
whether it names its own light, camera move, shot, colours or a black-and-white
look, whether its subject moves, whether there are several, and what an edit
instruction touches. Not here: the subjects it names (``subjects``), phrase choice (``choose``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ..quality.lexicon import lexicon
from ..quality.materials import is_material
from ..quality.words import color_of


@dataclass(frozen=True)
class Cues:
    scene: str  # a light/ambient context: "underwater", ..., "outdoor" or "any"
    medium: str | None  # a style family the prompt names (None: none named)
    narrow_medium: str | None  # a narrower style context ("watercolor", ...)
    other_style: bool  # the prompt names a style no family covers
    says_light: bool
    says_camera: bool
    says_shot: bool
    monochrome: bool
    names_colour: bool
    names_material: bool
    moving: bool
    still: bool  # the prompt asks for stillness ("in a still frame")
    group: bool
    edit_touches: frozenset[str]  # keep-contexts an edit instruction touches
    about_person: bool  # an edit that speaks of a person ("her outfit")
    names_place: bool  # a place in words the phrase book does not know ("at a scenic course")


def read_cues(prompt: str, cue_lists: dict, things: frozenset[str] = frozenset()) -> Cues:
    """The cues of ``prompt`` by the lists of cues.toml (``PhraseBook.cues``); ``things``: the
    words that name known subjects other than places."""
    text = normalised(prompt)
    words = cue_lists["words"]
    medium = cue_lists["medium"]
    family = next((f for f in medium["medium_order"] if says_any(text, medium[f])), None)
    narrow = next((n for n, cues in medium["narrow"].items() if says_any(text, cues)), None)
    scene = next(
        (s for s in cue_lists["scene_order"] if says_any(text, cue_lists["scene"][s])), "any"
    )
    if scene == "indoor" and says_any(text, words["open_air"]):
        scene = "outdoor"  # "outside the shop"
    edit = cue_lists["edit"]
    colour = has_colour(prompt)
    return Cues(
        scene=scene,
        medium=family,
        narrow_medium=narrow,
        other_style=family is None and says_any(text, medium["other"]["words"]),
        says_light=says_any(text, words["light"]),
        says_camera=says_any(text, words["camera"]),
        says_shot=says_any(text, words["shot"]),
        monochrome=says_any(text, words["monochrome"]),
        names_colour=colour,
        names_material=has_material(prompt, words["extra_materials"]),
        moving=says_any(text, words["moving"]) or _has_ing_verb(text),
        still=says_any(text, words["still"]),
        group=says_any(text, words["group"]),
        edit_touches=_edit_touches(text, edit, colour),
        about_person=says_any(text, edit["person"]),
        names_place=_names_place(text.split(), words, things),
    )


def _edit_touches(text: str, edit: dict, names_colour: bool) -> frozenset[str]:
    """The keep-contexts an edit touches; a change of light or a colour changes the colours too,
    and a change of style ("into an oil painting") every surface, the background included."""
    touched = {
        k for k, cues in edit.items() if k not in ("person", "transform") and says_any(text, cues)
    }
    if "lighting" in touched or names_colour:
        touched.add("colours")
    if "style" in touched:
        touched |= {"background", "lighting", "colours"}
    if says_any(text, edit["transform"]):
        touched |= {"lighting", "colours"}  # a campfire turned into a lantern changes the light too
    return frozenset(touched)


def normalised(text: str) -> str:
    """Lower case, one space between words, with a space at each end (for phrase lookups)."""
    return " " + " ".join(re.findall(r"[a-z0-9][a-z0-9'&+-]*", text.lower())) + " "


def says_any(text: str, cues) -> bool:
    """``text`` (``normalised``) uses one of ``cues`` as whole words (a one-word cue's plural
    too)."""
    return any(_says(text, cue) for cue in cues)


def _says(text: str, cue: str) -> bool:
    cue = " ".join(cue.lower().split())
    if f" {cue} " in text:
        return True
    return " " not in cue and (f" {cue}s " in text or f" {cue}es " in text)


_DETERMINERS = frozenset(
    "a an the this that these those its their his her my our your some every each".split()
)


def _names_place(words: list[str], lists: dict, things: frozenset[str]) -> bool:
    """A preposition of place, then within three words a noun that is no known thing and not in
    ``not_places`` ("playing golf at a scenic course")."""
    lex = lexicon()
    prepositions, not_places = set(lists["place_prepositions"]), set(lists["not_places"])
    for i, word in enumerate(words):
        if word not in prepositions:
            continue
        for following in words[i + 1 : i + 4]:
            if following in _DETERMINERS or (
                lex.is_modifier_word(following) and following not in things
            ):
                continue
            if following in things or following in not_places or following in prepositions:
                break
            if lex.noun_lemma(following) is not None:
                return True
            break
    return False


_ING_STOP = frozenset(
    "thing something nothing anything everything morning evening ceiling building "
    "clothing ring king spring string wing sibling pudding wedding painting drawing "
    "lighting setting stuffing icing frosting dumpling filling ending awning".split()
)


def _has_ing_verb(text: str) -> bool:
    """A present participle that is likely an action ("a dog chasing a ball")."""
    return any(w.endswith("ing") and len(w) > 5 and w not in _ING_STOP for w in text.split())


def has_colour(text: str) -> bool:
    lex = lexicon()
    return any(color_of(w, lex) for w in _words(text))


def has_material(text: str, extra=()) -> bool:
    """A material word: one of the assessment's families, or of ``extra`` (cues.toml)."""
    return any(is_material(w) or w in extra for w in _words(text))


@lru_cache(maxsize=4096)
def _words(text: str) -> tuple[str, ...]:
    return tuple(re.findall(r"[a-z][a-z-]*", text.lower()))
