"""The subjects a prompt names that the phrase book knows ("a knight", "two zebras", "a beach").

A subject is found by its noun or plural as whole words, the longest first
("hot dog" before "dog"); a noun that only modifies the next one ("a car
door", "an orange cat") is not a subject. Not here: the appearance said of it
(``choose``, ``layout``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..quality.lexicon import lexicon
from ..quality.materials import is_material
from ..quality.words import color_of
from .phrases import PhraseBook, Subject

MAX_WORDS = 3
_COUNTS = frozenset(
    "one two three four five six seven eight nine ten eleven twelve several many few some "
    "dozen dozens hundreds pair couple".split()
)
_NOT_HEADS = frozenset(
    "of and or with in on at by to from for into onto over under near behind beside "
    "while as is are was were the a an its their his her that which who whose then there "
    "here very so but nor yet all both each every no not just also up down out off through "
    "across along around about after before during between against toward towards inside "
    "outside beneath above below next has have had does do did can could will would may "
    "might must should being been be this these those my our your".split()
)


@dataclass(frozen=True)
class Mention:
    subject: Subject
    surface: str  # the words as the prompt has them ("zebras")
    plural: bool
    index: int  # word position in the prompt


def find_subjects(prompt: str, book: PhraseBook) -> list[Mention]:
    """The known subjects of ``prompt`` in order, each once; a clause (between punctuation) is
    read on its own, so "Vase, pan right" names a vase, not a "vase pan"."""
    forms = book.subject_forms
    words_lists = book.cues.get("words", {})
    describing = frozenset(words_lists.get("describing_nouns", ()))
    containers = frozenset(words_lists.get("containers", ()))
    found, seen, offset = [], set(), 0
    for clause in clauses(prompt):
        for mention in _in_clause(clause, forms, offset, describing, containers):
            if mention.subject.noun not in seen:
                found.append(mention)
                seen.add(mention.subject.noun)
        offset += len(clause)
    return found


def _in_clause(
    words: list[str],
    forms: dict,
    offset: int,
    describing: frozenset[str],
    containers: frozenset[str],
) -> list[Mention]:
    found, i = [], 0
    while i < len(words):
        match = _longest(words, i, forms)
        if match is None:
            i += 1
            continue
        length, subject, plural = match
        quantity = (
            i + length < len(words) and words[i + length] == "of" and subject.noun not in containers
        )
        if not (
            quantity
            or _modifies_next(words, i + length, forms)
            or _is_verb(words, i, length)
            or _other_kind(words, i, forms, describing)
        ):
            found.append(Mention(subject, " ".join(words[i : i + length]), plural, offset + i))
        i += length
    return found


def clauses(prompt: str) -> list[list[str]]:
    """The prompt's clauses (split at punctuation) as lower-case words, possessive 's dropped."""
    return [prompt_words(part) for part in re.split(r"[,.;:!?()\[\]]+", prompt) if part.strip()]


def prompt_words(prompt: str) -> list[str]:
    """Lower-case words, possessive 's dropped."""
    return [re.sub(r"'s$", "", w) for w in re.findall(r"[a-z][a-z'-]*", prompt.lower())]


def _other_kind(words: list[str], i: int, forms: dict, describing: frozenset[str]) -> bool:
    """A noun before the match makes it another kind of thing ("a koala bear", "a toy car",
    "a fire truck"); an adjective, colour, material, count or a describing noun ("a baby
    elephant") does not. (Multi-word subjects such as "teddy bear" are matched whole before.)"""
    if i == 0:
        return False
    before = words[i - 1]
    lex = lexicon()
    if (
        before in _NOT_HEADS
        or before in _COUNTS
        or before in describing
        or lex.is_modifier_word(before)
        or color_of(before, lex)
    ):
        return False  # "an orange cat": a colour, not the fruit
    if before in forms:
        return True  # two known nouns in a compound ("koala bear"): neither is sure
    return (
        lex.noun_lemma(before) is not None
        and not lex.is_modifier_word(before)
        and not is_material(before)
        and not before.endswith(("ing", "ed"))
    )


def _is_verb(words: list[str], i: int, length: int) -> bool:
    """A one-word match right after a noun that can be a verb there ("one person ties", "a cat
    watches"): the sentence's verb, not a thing."""
    if length != 1 or i == 0:
        return False
    lex = lexicon()
    before, word = words[i - 1], words[i]
    noun_before = (
        before not in _NOT_HEADS and before not in _COUNTS and lex.noun_lemma(before) is not None
    )
    return noun_before and word.endswith("s") and lex.verb_lemma(word) is not None


def _longest(words: list[str], i: int, forms: dict) -> tuple[int, Subject, bool] | None:
    for length in range(min(MAX_WORDS, len(words) - i), 0, -1):
        hit = forms.get(" ".join(words[i : i + length]))
        if hit is not None:
            return length, hit[0], hit[1]
    return None


def _modifies_next(words: list[str], after: int, forms: dict) -> bool:
    """The word after a match is a noun it modifies ("car door", "apple pie")."""
    if after >= len(words):
        return False
    following = words[after]
    lex = lexicon()
    if (
        following.endswith("s")
        and lex.verb_lemma(following) is not None
        and not following.endswith("ss")
    ):
        return False  # "a cat watches": the verb, not a "cat watch"
    if following in _NOT_HEADS or following in forms:
        return following in forms
    if not lex.knows(following) and following.isalpha():
        return True  # "chicken pho": a dish the lexicon does not know, made of chicken
    lemma = lex.noun_lemma(following)
    return (
        lemma is not None
        and lex.is_noun(lemma)
        and not lex.mostly_verb(lemma)
        and not following.endswith("ing")
    )


def find_action(prompt: str, book: PhraseBook):
    """The first action of the prompt the book knows ("a dog running" -> running), or None."""
    lex = lexicon()
    for words in clauses(prompt):
        for i, word in enumerate(words):
            action = book.actions.get(word)
            if action is None or (i and words[i - 1] == "camera"):
                continue  # "the camera glides": the camera's move, not the subject's
            following = words[i + 1] if i + 1 < len(words) else ""
            if (
                word.endswith("ing")
                and following not in _NOT_HEADS
                and lex.noun_lemma(following) is not None
                and not lex.mostly_verb(lex.noun_lemma(following))
            ):
                continue  # "a swimming pool", "rolling hills": a modifier
            return action
    return None
