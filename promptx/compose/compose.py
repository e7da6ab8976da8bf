"""``compose``: one structured enhancement, the user's words and one phrase per part.

The profile's layout (``Profile.compose``) names the parts in order; each is
said only where the prompt does not already say it and a phrase fits
(``choose``). The text keeps the target's word and encoder budget by dropping
the least important parts first. The result says what was added, part by part.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

from ..errors import InvalidInputError
from ..profiles.schema import Profile, count_words
from . import layout
from .choose import MAX_SUBJECTS, Chooser, Choice, Scorer, Slot, fitting, part_contexts
from .cues import read_cues
from .phrases import PhraseBook, phrase_book
from .subjects import Mention, find_action, find_subjects

KEEP_ASPECTS = ("identity", "composition", "background", "lighting", "style", "colours")
KEEP_SAID = 2


@dataclass(frozen=True)
class Composition:
    text: str
    added: dict[str, str] = field(default_factory=dict)  # part -> the words it added


def compose(
    prompt: str,
    profile: Profile,
    *,
    seed: int = 0,
    scorer: Scorer | None = None,
    book: PhraseBook | None = None,
    fits: Callable[[str], bool] | None = None,
    without: frozenset[str] = frozenset(),
    avoid: frozenset[str] = frozenset(),
    style: str | None = None,
) -> Composition:
    """The structured enhancement of ``prompt`` for ``profile``; ``scorer`` ranks the drawn
    phrases (the model's likelihood), ``fits`` says whether a text is within the target's
    encoder budget (the word budget is the profile's); ``without``: parts not to say; ``avoid``:
    words no phrase may have (what an assessment objected to); ``style``: a style preset of the
    profile the caller chose ("anime", "3d-render"), read as if the prompt asked for it."""
    if profile.compose is None:
        raise InvalidInputError(f"{profile.name} has no structured layout; use strength='full'")
    book = book or phrase_book()
    asked = f"{prompt}. {style.replace('-', ' ')} style" if style else prompt
    cues = read_cues(asked, book.cues, book.thing_words)
    mentions = find_subjects(prompt, book)
    chooser = Chooser(book, prompt, cues, seed, scorer, avoid)
    slots = [(part, s) for part, s in _slots(profile, chooser, mentions) if part not in without]
    choices = chooser.decide([s for _, s in slots if isinstance(s, Slot)])
    chosen = _by_part(slots, choices)
    return _fitted(prompt, profile, chosen, fits)


def _slots(profile: Profile, chooser: Chooser, mentions: list[Mention]) -> list[tuple[str, object]]:
    """(part, Slot or list of keep phrases) in the layout's order; the prompt's own part has
    none."""
    action = None if chooser.cues.still else find_action(chooser.prompt, chooser.book)
    if (
        action is not None
        and action.name not in chooser.book.cues["words"]["any_doer_actions"]
        and not any(m.subject.kind in ("person", "animal") for m in mentions)
    ):
        action = None  # "a wave washes over the sand": nobody is washing
    return [
        (part, slot)
        for part in profile.compose.parts
        for slot in _part_slots(part, profile, chooser, mentions, action)
    ]


def _part_slots(
    part: str, profile: Profile, chooser: Chooser, mentions: list[Mention], action
) -> list:
    """The slots of one part: one per described subject for appearance and setting, none for the
    prompt itself or for a generic motion line where the action's own phrase says how it moves."""
    if (
        part == "prompt"
        or part == "motion"
        and action is not None
        and "action" in profile.compose.parts
    ):
        return []
    if part == "keep":
        return [_kept(chooser)]
    if part in ("appearance", "setting"):
        things = [m for m in mentions if m.subject.kind != "place"][:MAX_SUBJECTS]
        places = [m for m in mentions if m.subject.kind == "place"][:1]
        slots = [
            chooser.subject(part, m, layout.frame(part, m))
            for m in (things if part == "appearance" else places)
        ]
    elif part == "action":
        slots = [_action_slot(profile, chooser, action)]
    else:
        # an image comes alive with small camera moves only
        contexts = (
            _image_to_video_contexts(part, chooser, mentions) if profile.task == "i2v" else None
        )
        slots = [
            chooser.part(
                part,
                mentions,
                layout.frame(part),
                banned=_banned(part, profile, chooser, mentions),
                contexts=contexts,
            )
        ]
    return [s for s in slots if s]


def _image_to_video_contexts(
    part: str, chooser: Chooser, mentions: list[Mention]
) -> list[str] | None:
    """An image comes alive: small camera moves only, and motion whether or not the prompt
    names an action ("the friends chat and laugh")."""
    if part == "camera":
        return ["still"] if part_contexts("camera", chooser.cues, mentions) else []
    if part == "motion" and not chooser.cues.still:
        return part_contexts("motion", replace(chooser.cues, moving=True), mentions)
    return None


def _banned(
    part: str, profile: Profile, chooser: Chooser, mentions: list[Mention]
) -> frozenset[str]:
    """Words the phrase of ``part`` must not have for this target and prompt (cues.toml)."""
    words, banned = chooser.book.cues["words"], set()
    if part == "style" and profile.task == "t2v":
        banned |= set(words["not_for_video"])
    if part == "shot":
        if chooser.cues.moving:
            banned |= set(words["not_for_moving_shot"])
        if not any(m.subject.kind == "person" for m in mentions):
            banned |= set(words["only_for_people_shot"])
        things = [m for m in mentions if m.subject.kind != "place"]
        if len(things) != 1:
            banned |= set(words["not_for_unsure_shot"])
        if not things:
            banned |= set(words["not_for_unknown_shot"])
        if things and things[0].subject.kind in ("object", "food", "plant"):
            banned |= set(words["not_for_small_things_shot"])
        if not things or things[0].subject.kind != "food":
            banned |= set(words["only_for_food_shot"])
    if part == "composition":
        banned |= set(words["not_in_composition"]) | set(words["focus"])
    drawn_medium = (chooser.cues.medium or "photo") not in ("photo", "bw")
    if part in ("background", "composition", "quality_tags") and drawn_medium:
        banned |= set(words["photographic"])
    return frozenset(banned)


def _action_slot(profile: Profile, chooser: Chooser, action) -> Slot | None:
    """How the prompt's action looks: in motion for a video, frozen in one instant for an image."""
    if action is None:
        return None
    phrases = list(action.still if profile.task in ("t2i", "i2i") else action.video)
    return chooser.phrases("action", layout.frame("action"), phrases)


def _kept(chooser: Chooser) -> list[str]:
    """What an edit keeps: two aspects it does not touch (a person's identity first, where the
    edit speaks of one and leaves the face alone), then everything else."""
    contexts = chooser.book.part("keep").contexts
    cues = chooser.cues
    free = [a for a in KEEP_ASPECTS[1:] if a not in cues.edit_touches and a in contexts]
    aspects = chooser.rng.sample(free, min(KEEP_SAID, len(free)))
    if cues.about_person and "identity" not in cues.edit_touches:
        aspects = ["identity"] + aspects[: KEEP_SAID - 1]
    phrases = [
        chooser.rng.choice(fitting(list(contexts[a]), chooser.cues) or list(contexts[a]))
        for a in sorted(aspects, key=KEEP_ASPECTS.index)
    ]
    return phrases + [chooser.rng.choice(list(contexts["any"]))]


def _by_part(slots, choices: list[Choice]) -> list[tuple[str, object]]:
    """The slots with each drawn slot replaced by its choice."""
    picked = iter(choices)
    return [(part, next(picked) if isinstance(s, Slot) else s) for part, s in slots]


def _fitted(
    prompt: str,
    profile: Profile,
    chosen: list[tuple[str, object]],
    fits: Callable[[str], bool] | None,
) -> Composition:
    """The text, with the least important parts dropped until it fits the budget."""
    budget = profile.length.max_words
    rank = {p: i for i, p in enumerate(layout.DROP_ORDER)}
    while True:
        text, added = _written(prompt, profile, chosen)
        if not chosen or count_words(text) <= budget and (fits is None or fits(text)):
            return Composition(text, added)
        worst = min(range(len(chosen)), key=lambda i: (rank.get(chosen[i][0], 99), -i))
        chosen = chosen[:worst] + chosen[worst + 1 :]


def _written(
    prompt: str, profile: Profile, chosen: list[tuple[str, object]]
) -> tuple[str, dict[str, str]]:
    """The text of the chosen parts in the layout's order, and what each part added."""
    order = {part: i for i, part in enumerate(profile.compose.parts)}
    said = sorted(
        chosen, key=lambda item: order[item[0]]
    )  # stable: a part's subjects keep their order
    added: dict[str, str] = {}
    if profile.format == "tags":
        for name, item in said:
            added[name] = ", ".join(filter(None, [added.get(name), item.phrase]))
        return layout.tags(prompt, [item.phrase for _, item in said]), added
    sentences = []
    for name, item in said:
        sentence = layout.keep_sentence(item) if name == "keep" else layout.sentence(item)
        sentences.append(sentence)
        added[name] = " ".join(filter(None, [added.get(name), sentence]))
    opening = layout.prompt_sentence(prompt)
    at = sum(
        order[name] < order["prompt"] for name, _ in said
    )  # parts said before the user's words
    return " ".join(filter(None, sentences[:at] + [opening] + sentences[at:])), added
