"""The phrase sets of ``templates/phrases``: loaded once, checked against their schema.

Each part (light, camera, shot, ...) maps contexts to alternative phrases; each
subject (a knight, a beach, ...) has appearance phrases. A file that breaks
the rules of templates/phrases/README.md is a ``PhraseSetError`` naming the file
and the phrase. Not here: which phrase is said (``choose``), reading the prompt (``cues``).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path

from ..data_cache import cached
from ..errors import PromptxError
from ..profiles.registry import builtin_template_dir

# the contexts each part may use (templates/phrases/README.md)
PART_CONTEXTS = {
    "light": {
        "any",
        "outdoor",
        "indoor",
        "night",
        "dawn_dusk",
        "rain",
        "snow",
        "underwater",
        "space",
    },
    "camera": {"any", "moving", "still", "landscape"},
    "shot": {"any", "person", "animal", "object", "landscape", "group"},
    "motion": {"any", "person", "animal", "vehicle", "nature", "object"},
    "style": {
        "photo",
        "painting",
        "drawing",
        "anime",
        "3d",
        "pixel",
        "bw",
        "watercolor",
        "oil",
        "sketch",
        "cartoon",
        "claymation",
    },
    "composition": {"any", "photo", "object", "landscape", "person"},
    "background": {"any", "person", "animal", "vehicle", "food", "object", "plant"},
    "ambient": {"any", "outdoor", "indoor", "water", "night"},
    "keep": {"identity", "composition", "background", "lighting", "style", "colours", "any"},
    "quality_tags": {"any", "photo", "painting", "drawing", "anime", "3d", "pixel"},
}
SUBJECT_KINDS = {"person", "animal", "vehicle", "food", "object", "place", "plant"}
PRONOUNS = frozenset("he she they it its his her their them him itself themselves".split())
_ARTICLES = frozenset({"a", "an", "one"})
PHRASE_WORDS = (2, 12)
APPEARANCE_WORDS = (3, 12)


class PhraseSetError(PromptxError):
    """A phrase file breaks the schema of templates/phrases/README.md."""


@dataclass(frozen=True)
class PartPhrases:
    """One part's alternatives by context."""

    part: str
    description: str
    contexts: dict[str, tuple[str, ...]]

    def for_contexts(self, names) -> list[str]:
        """The phrases of the named contexts, in the order named, without repeats."""
        seen: dict[str, None] = {}
        for name in names:
            seen.update(dict.fromkeys(self.contexts.get(name, ())))
        return list(seen)


@dataclass(frozen=True)
class Subject:
    """A subject people prompt: its noun, kind, plural and appearance phrases."""

    noun: str
    kind: str
    plural: str
    phrases: tuple[str, ...]


def counts_one(phrase: str) -> bool:
    """The phrase says one of something ("a long tail"): it cannot follow "The dogs have"."""
    return bool(_ARTICLES & set(re.findall(r"[a-z]+", phrase.lower())))


@dataclass(frozen=True)
class Action:
    """An action people prompt ("running"): the words that name it, how it looks in motion
    (video) and frozen in one instant (a still image)."""

    name: str
    forms: tuple[str, ...]
    video: tuple[str, ...]
    still: tuple[str, ...]


@dataclass(frozen=True)
class PhraseBook:
    parts: dict[str, PartPhrases]
    subjects: dict[str, Subject]
    cues: dict = field(default_factory=dict)
    actions: dict[str, Action] = field(default_factory=dict)  # by each of its forms

    @cached_property
    def subject_forms(self) -> dict[str, tuple[Subject, bool]]:
        """Each subject's singular and plural form -> (subject, is plural)."""
        forms: dict[str, tuple[Subject, bool]] = {}
        for subject in self.subjects.values():
            # a noun that is plural already ("headphones", "scissors") takes "have"
            always_plural = subject.plural == subject.noun and subject.noun.endswith("s")
            forms.setdefault(
                subject.plural, (subject, subject.plural != subject.noun or always_plural)
            )
            forms[subject.noun] = (subject, always_plural)
        return forms

    @cached_property
    def thing_words(self) -> frozenset[str]:
        """Every word of the known subjects that are not places (their nouns and plurals)."""
        return frozenset(
            w
            for form, (subject, _) in self.subject_forms.items()
            if subject.kind != "place"
            for w in form.split()
        )

    def part(self, name: str) -> PartPhrases:
        return self.parts[name]


def default_directory() -> Path:
    return builtin_template_dir() / "phrases"


@lru_cache(maxsize=4)
def phrase_book(directory: str | None = None) -> PhraseBook:
    """Every phrase file under ``directory`` (default: the builtin templates/phrases), checked;
    parsed once per version of the files (``promptx.data_cache``)."""
    root = Path(directory) if directory else default_directory()
    return cached("phrase-book", sorted(root.rglob("*.toml")), lambda: _read_book(root))


def _read_book(root: Path) -> PhraseBook:
    parts = {}
    for path in sorted((root / "parts").glob("*.toml")):
        part = load_part(path)
        parts[part.part] = part
    subjects: dict[str, Subject] = {}
    for path in sorted((root / "subjects").glob("*.toml")):
        for subject in load_subjects(path):
            if subject.noun in subjects:
                raise PhraseSetError(
                    f"{path.name}: subject {subject.noun!r} is also in another file"
                )
            subjects[subject.noun] = subject
    cues = _read(root / "cues.toml")
    actions = load_actions(root / "actions.toml") if (root / "actions.toml").exists() else []
    by_form: dict[str, Action] = {}
    for action in actions:
        for form in action.forms:
            if form in by_form:
                raise PhraseSetError(
                    f"actions.toml: {form!r} names both {by_form[form].name!r} and {action.name!r}"
                )
            by_form[form] = action
    return PhraseBook(parts, subjects, cues, by_form)


def load_part(path: Path) -> PartPhrases:
    data = _read(path)
    name = data.get("part")
    if name != path.stem or name not in PART_CONTEXTS:
        raise PhraseSetError(
            f"{path.name}: part must be {path.stem!r} (one of {', '.join(sorted(PART_CONTEXTS))})"
        )
    contexts = data.get("contexts")
    if not isinstance(contexts, dict) or not contexts:
        raise PhraseSetError(f"{path.name}: needs a [contexts] table")
    unknown = set(contexts) - PART_CONTEXTS[name]
    if unknown:
        raise PhraseSetError(
            f"{path.name}: unknown contexts {sorted(unknown)}; "
            f"allowed: {sorted(PART_CONTEXTS[name])}"
        )
    seen: set[str] = set()
    for context, phrases in contexts.items():
        if not isinstance(phrases, list) or not phrases:
            raise PhraseSetError(f"{path.name}: context {context!r} needs a list of phrases")
        for phrase in phrases:
            check_phrase(path.name, phrase, PHRASE_WORDS)
            if phrase.lower() in seen:
                raise PhraseSetError(f"{path.name}: {phrase!r} is listed twice")
            seen.add(phrase.lower())
    return PartPhrases(
        name, str(data.get("description", "")), {c: tuple(p) for c, p in contexts.items()}
    )


def load_subjects(path: Path) -> list[Subject]:
    subjects = []
    for noun, table in _read(path).items():
        where = f"{path.name} [{noun}]"
        if not isinstance(table, dict) or table.get("kind") not in SUBJECT_KINDS:
            raise PhraseSetError(f"{where}: kind must be one of {', '.join(sorted(SUBJECT_KINDS))}")
        if noun != noun.lower().strip():
            raise PhraseSetError(f"{where}: a subject's noun is lower case")
        phrases = table.get("phrases")
        if not isinstance(phrases, list) or not 3 <= len(phrases) <= 8:
            raise PhraseSetError(f"{where}: needs 3 to 8 phrases")
        if len({p.lower() for p in phrases}) != len(phrases):
            raise PhraseSetError(f"{where}: a phrase is listed twice")
        for phrase in phrases:
            check_phrase(where, phrase, APPEARANCE_WORDS, leading_article=False)
        plural = table.get("plural") or regular_plural(noun)
        subjects.append(Subject(noun, table["kind"], plural, tuple(phrases)))
    return subjects


def load_actions(path: Path) -> list[Action]:
    actions = []
    for name, table in _read(path).items():
        where = f"{path.name} [{name}]"
        forms = table.get("forms") if isinstance(table, dict) else None
        if (
            not isinstance(forms, list)
            or not forms
            or not all(
                isinstance(f, str) and f == f.lower().strip() and " " not in f for f in forms
            )
        ):
            raise PhraseSetError(f"{where}: forms must be a list of lower-case single words")
        lists = {}
        for kind in ("video", "still"):
            phrases = table.get(kind)
            if not isinstance(phrases, list) or not 2 <= len(phrases) <= 8:
                raise PhraseSetError(f"{where}: needs 2 to 8 {kind} phrases")
            for phrase in phrases:
                check_phrase(where, phrase, PHRASE_WORDS)
            lists[kind] = tuple(phrases)
        actions.append(Action(name, tuple(forms), lists["video"], lists["still"]))
    return actions


def check_phrase(
    where: str, phrase, bounds: tuple[int, int], *, leading_article: bool = True
) -> None:
    """The rules every phrase keeps (templates/phrases/README.md)."""
    if not isinstance(phrase, str) or not phrase.strip():
        raise PhraseSetError(f"{where}: a phrase must be a non-empty string")
    tokens = re.findall(r"[a-z0-9][a-z0-9'&-]*", phrase.lower())
    if not bounds[0] <= len(phrase.split()) <= bounds[1]:
        raise PhraseSetError(f"{where}: {phrase!r} must have {bounds[0]} to {bounds[1]} words")
    if phrase.rstrip()[-1] in ".!?" or '"' in phrase:
        raise PhraseSetError(f"{where}: {phrase!r} ends with a period or has quotes")
    if leading_article and tokens and tokens[0] in _ARTICLES:
        raise PhraseSetError(f"{where}: {phrase!r} has an article ('a', 'an', 'one')")
    pronouns = PRONOUNS & set(tokens)
    if pronouns:
        raise PhraseSetError(f"{where}: {phrase!r} has a pronoun ({', '.join(sorted(pronouns))})")


def regular_plural(noun: str) -> str:
    """The plural of the last word of ``noun`` by the regular rules."""
    head, _, last = noun.rpartition(" ")
    if re.search(r"(s|x|z|ch|sh)$", last):
        last += "es"
    elif re.search(r"[^aeiou]y$", last):
        last = last[:-1] + "ies"
    else:
        last += "s"
    return f"{head} {last}".strip()


def _read(path: Path) -> dict:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise PhraseSetError(f"{path.name}: {exc}") from None
