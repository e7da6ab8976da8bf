"""Which phrase each part says: the candidates that fit the prompt's cues, one chosen.

Candidates come from the part's contexts for this prompt (its scene, medium,
subjects, motion), less phrases that could contradict it (a colour where the
prompt names one or asks for black and white, a material where it names one).
A seeded draw keeps a few; a ``Scorer`` (the model's likelihood of each in the
prompt's company) picks among them, else the first drawn is said. Not here:
how a part is written out (``layout``).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Callable, Sequence

from .cues import Cues, has_colour, has_material
from .phrases import PhraseBook, counts_one
from .subjects import Mention

# candidates drawn per part before the scorer picks one
CANDIDATES = 4
MAX_SUBJECTS = 2
# a scorer gets the prompt and (frame, phrase) pairs and returns how well each phrase fits
Scorer = Callable[[str, Sequence[tuple[str, str]]], Sequence[float]]


@dataclass(frozen=True)
class Choice:
    part: str
    phrase: str
    mention: Mention | None = None  # the subject an appearance or setting phrase describes


def part_contexts(part: str, cues: Cues, mentions: list[Mention]) -> list[str]:
    """The contexts whose phrases fit this prompt for ``part`` ([] : the part is not said)."""
    kind = _main_kind(mentions)
    rule = _RULES.get(part)
    return rule(cues, kind, mentions) if rule else []


def _light(cues, kind, mentions):
    return [] if cues.says_light else _with_any(cues.scene)


def _camera(cues, kind, mentions):
    if cues.says_camera:
        return []
    if cues.moving:
        return ["moving", "any"]
    return ["landscape", "any"] if kind == "place" else ["still", "any"]


def _shot(cues, kind, mentions):
    if cues.says_shot:
        return []
    if cues.group:
        return ["group", "any"]
    things = [m for m in mentions if m.subject.kind != "place"]
    if len(things) > 1:
        return ["any"]
    if kind in ("object", "plant", "vehicle", "food") and (
        len(things) < len(mentions) or cues.scene not in ("any", "indoor")
    ):
        return ["landscape", "any"]  # "a small house on a mountain top"
    return _with_any(
        {
            "person": "person",
            "animal": "animal",
            "place": "landscape",
            "food": "object",
            "object": "object",
            "plant": "object",
        }.get(kind, "any")
    )


def _motion(cues, kind, mentions):
    if cues.still or not cues.moving and kind in (None, "object", "food"):
        return []
    return _with_any(
        {
            "person": "person",
            "animal": "animal",
            "vehicle": "vehicle",
            "plant": "nature",
            "place": "nature",
            "object": "object",
            "food": "object",
        }.get(kind, "any")
    )


def _style(cues, kind, mentions):
    if cues.other_style:
        return []
    if cues.narrow_medium:
        return [cues.narrow_medium]
    if cues.monochrome and cues.medium in (None, "photo", "bw"):
        return ["bw"]
    return [cues.medium or "photo"]


def _composition(cues, kind, mentions):
    contexts = ["photo"] if (cues.medium or "photo") in ("photo", "bw") else []
    contexts += {
        "person": ["person"],
        "place": ["landscape"],
        "object": ["object"],
        "food": ["object"],
        "plant": ["object"],
    }.get(kind, [])
    return contexts + ["any"]


def _background(cues, kind, mentions):
    """Only for a prompt about known things that names no place at all."""
    things = {m.subject.kind for m in mentions if m.subject.kind != "place"}
    if (
        cues.scene != "any"
        or cues.names_place
        or not things
        or len(things) < len({m.subject.kind for m in mentions})
    ):
        return []
    return _with_any(things.pop() if len(things) == 1 else "any")


def _ambient(cues, kind, mentions):
    scene = {
        "underwater": "water",
        "night": "night",
        "indoor": "indoor",
        "outdoor": "outdoor",
        "dawn_dusk": "outdoor",
        "rain": "outdoor",
        "snow": "outdoor",
    }.get(cues.scene, "any")
    return _with_any(scene)


def _quality_tags(cues, kind, mentions):
    family = "photo" if (cues.medium or "photo") == "bw" else (cues.medium or "photo")
    return [family, "any"] if not cues.other_style else ["any"]


def _with_any(context: str) -> list[str]:
    return ["any"] if context == "any" else [context, "any"]


_RULES = {
    "light": _light,
    "camera": _camera,
    "shot": _shot,
    "motion": _motion,
    "style": _style,
    "composition": _composition,
    "background": _background,
    "ambient": _ambient,
    "quality_tags": _quality_tags,
}


def _main_kind(mentions: list[Mention]) -> str | None:
    """The kind of the prompt's first non-place subject, else "place" when it names one."""
    for mention in mentions:
        if mention.subject.kind != "place":
            return mention.subject.kind
    return "place" if mentions else None


def _base(word: str) -> str:
    """A word without a plural ending, to match "trucks" with "truck"."""
    word = word.lower()
    return word[:-1] if word.endswith("s") and not word.endswith("ss") and len(word) > 3 else word


def _words_of(phrase: str) -> set[str]:
    return set(re.findall(r"[a-z][a-z'-]*", phrase.lower()))


def fitting(
    phrases: list[str], cues: Cues, *, subject: bool = False, extra_materials=()
) -> list[str]:
    """Phrases that cannot contradict the prompt's colours (or black and white) and materials."""
    out = phrases
    if cues.names_colour or cues.monochrome:
        out = [p for p in out if not has_colour(p)]
    if subject and cues.names_material:
        out = [p for p in out if not has_material(p, extra_materials)]
    return out


@dataclass(frozen=True)
class Slot:
    """A part to say and the phrases drawn for it (one gets said)."""

    part: str
    frame: str  # the words the phrase follows when said ("The camera")
    drawn: tuple[str, ...]
    mention: Mention | None = None


class Chooser:
    """Draws candidates for each part of one prompt (``rng`` seeded by the caller's seed), then
    picks one per part: the scorer's best, in one call for every part, else the first drawn."""

    def __init__(
        self,
        book: PhraseBook,
        prompt: str,
        cues: Cues,
        seed: int,
        scorer: Scorer | None = None,
        avoid: frozenset[str] = frozenset(),
    ) -> None:
        self.book, self.prompt, self.cues, self.scorer = book, prompt, cues, scorer
        self.avoid = frozenset(_base(w) for w in avoid)  # words no phrase may have
        self.rng = random.Random(seed)

    def part(
        self,
        part: str,
        mentions: list[Mention],
        frame: str,
        *,
        banned: frozenset[str] = frozenset(),
        contexts: list[str] | None = None,
    ) -> Slot | None:
        """A slot of ``part``: phrases of its most specific context where enough of them fit,
        else of all its contexts (``contexts``: these instead of the prompt's); none with a
        ``banned`` word."""
        contexts = part_contexts(part, self.cues, mentions) if contexts is None else contexts
        if not contexts or part not in self.book.parts:
            return None
        phrases = self.book.part(part)
        specific = self._allowed(phrases.for_contexts(contexts[:1]), banned)
        if len(specific) < CANDIDATES:
            specific = self._allowed(phrases.for_contexts(contexts), banned)
        return self._slot(part, frame, specific)

    def _allowed(self, phrases: list[str], banned: frozenset[str]) -> list[str]:
        return [p for p in fitting(phrases, self.cues) if not banned & _words_of(p)]

    def phrases(self, part: str, frame: str, phrases: list[str]) -> Slot | None:
        """A slot of given phrases (an action's), less those that could contradict the prompt."""
        return self._slot(part, frame, fitting(phrases, self.cues))

    def subject(self, part: str, mention: Mention, frame: str) -> Slot | None:
        phrases = [p for p in mention.subject.phrases if not (mention.plural and counts_one(p))]
        phrases = fitting(
            phrases,
            self.cues,
            subject=True,
            extra_materials=self.book.cues["words"]["extra_materials"],
        )
        return self._slot(part, frame, phrases, mention)

    def _slot(
        self, part: str, frame: str, phrases: list[str], mention: Mention | None = None
    ) -> Slot | None:
        if self.avoid:
            phrases = [p for p in phrases if not self.avoid & {_base(w) for w in _words_of(p)}]
        if not phrases:
            return None
        drawn = tuple(self.rng.sample(phrases, min(CANDIDATES, len(phrases))))
        return Slot(part, frame, drawn, mention)

    def decide(self, slots: list[Slot]) -> list[Choice]:
        """One choice per slot, in order."""
        if self.scorer is None:
            return [Choice(s.part, s.drawn[0], s.mention) for s in slots]
        pairs = [(s.frame, phrase) for s in slots for phrase in s.drawn]
        scores, choices, at = list(self.scorer(self.prompt, pairs)), [], 0
        for slot in slots:
            mine = scores[at : at + len(slot.drawn)]
            choices.append(Choice(slot.part, slot.drawn[mine.index(max(mine))], slot.mention))
            at += len(slot.drawn)
        return choices
