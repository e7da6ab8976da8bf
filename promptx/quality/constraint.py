"""The decoding constraint: what an output may not begin to write, as token ids.

``DecodingConstraint.for_prompt`` decides, from the prompt (and the caption
of its image), which salient entities are not licensed (the same
``Licence`` the assessment uses), whether second-person pronouns and
opening quotation marks are off limits (they are unless the input has
them), whether camera moves are ("camera static" prompts), whether photo
words are (a painting or a sketch asked for: ``medium``) and which times of
day are (those the prompt's own rules out: ``daytime``).
``VocabularyIndex`` maps that onto one tokenizer's vocabulary: it is
built once per tokenizer from the token texts, and ``banned_ids`` is a set
lookup per indexed word, with no string work per generated token. The engine
only applies the ids (``engine.decode.sampling.TokenMask``); it knows nothing of
words.

Not here: the assessment (``assess``), which still checks every output
(a word split over several tokens can pass the mask).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .camera import MOVE_WORDS, asks_static_camera
from .daytime import asked_time, clashing_words
from .lexicon import Lexicon, lexicon
from .licensing import PERSON_PRONOUNS, Licence
from .medium import PHOTO_WORDS, REALISTIC_WORDS, asks_drawn_medium, asks_stylized

__all__ = ["DecodingConstraint", "VocabularyIndex"]

_SECOND_PERSON = frozenset("you your yours yourself yourselves".split())
_QUOTE_MARKS = ('"', "“", "”", "«", "»", "「", "『")
_WORD_TOKEN = re.compile(r"^ ([A-Za-z]+)$")
_CACHED_CONSTRAINTS = 256  # retries and batches of one request reuse its ids


@dataclass(frozen=True)
class DecodingConstraint:
    """What one request's output must not start to write."""

    licence: Licence | None  # None: no salient word is forbidden (an image nobody described)
    second_person: bool  # forbid "you", "your", ...
    quotes: bool  # forbid opening quotation marks
    camera_still: bool = False  # forbid words that move the camera ("camera static" prompts)
    drawn: bool = False  # forbid photo words (a painting, sketch or anime picture asked for)
    stylized: bool = (
        False  # forbid "realistic" and its kin (a cartoon or surrealist picture asked for)
    )
    other_times: frozenset[str] = (
        frozenset()
    )  # times of day the prompt's rules out ("night": "morning")

    @classmethod
    def for_prompt(
        cls, prompt: str, context: str | None = None, *, subjects: bool = True
    ) -> "DecodingConstraint":
        lex = lexicon()
        text = f"{prompt} {context or ''}"
        low = set(re.findall(r"[a-z]+", text.lower()))
        licence = Licence.of(prompt, context, lex) if subjects else None
        time = asked_time(prompt)
        return cls(
            licence,
            second_person=not (low & _SECOND_PERSON),
            quotes=not any(q in text for q in _QUOTE_MARKS),
            camera_still=asks_static_camera(prompt),
            drawn=asks_drawn_medium(prompt),
            stylized=asks_stylized(prompt),
            other_times=clashing_words(time, context) if time else frozenset(),
        )


class VocabularyIndex:
    """The word-start tokens of one vocabulary that a constraint may ban."""

    def __init__(self, token_texts: list[str], lex: Lexicon | None = None) -> None:
        self._lex = lex or lexicon()
        self.salient: dict[tuple[str, bool], list[int]] = {}  # (lemma, plural) -> ids
        self.second_person: list[int] = []
        self.person_pronouns: list[int] = []
        self.quotes: list[int] = []
        self.camera_moves: list[int] = []
        self.photo_words: list[int] = []
        self.words: dict[str, list[int]] = {}  # every plain word -> its ids
        self._banned: dict[DecodingConstraint, tuple[int, ...]] = {}
        forms = self._lex.salient_forms()
        for tid, text in enumerate(token_texts):
            if any(q in text for q in _QUOTE_MARKS):
                self.quotes.append(tid)
                continue
            m = _WORD_TOKEN.match(text)
            if not m:
                continue
            word = m.group(1).lower()
            self.words.setdefault(word, []).append(tid)
            if word in _SECOND_PERSON:
                self.second_person.append(tid)
                continue
            if word in PERSON_PRONOUNS:
                self.person_pronouns.append(tid)
                continue
            if word in MOVE_WORDS:
                self.camera_moves.append(tid)
            if word in PHOTO_WORDS:
                self.photo_words.append(tid)
            lemma = forms.get(word)
            if lemma and self._lex.is_noun(lemma):
                self.salient.setdefault((lemma, word != lemma), []).append(tid)

    def banned_ids(self, constraint: DecodingConstraint) -> tuple[int, ...]:
        """Token ids the constrained output may not emit (computed once per constraint)."""
        if constraint not in self._banned:
            if len(self._banned) >= _CACHED_CONSTRAINTS:
                self._banned.pop(next(iter(self._banned)))
            self._banned[constraint] = self._compute(constraint)
        return self._banned[constraint]

    def _compute(self, constraint: DecodingConstraint) -> tuple[int, ...]:
        ids: list[int] = []
        if constraint.licence is not None:
            for (lemma, plural), tids in self.salient.items():
                if not constraint.licence.allows(lemma, self._lex, plural=plural):
                    ids += tids
            if not constraint.licence.animate:
                ids += self.person_pronouns
        if constraint.second_person:
            ids += self.second_person
        if constraint.quotes:
            ids += self.quotes
        if constraint.camera_still:
            ids += self.camera_moves
        if constraint.drawn:
            ids += self.photo_words
        if constraint.stylized:
            ids += [tid for word in REALISTIC_WORDS for tid in self.words.get(word, [])]
        for word in constraint.other_times:
            ids += self.words.get(word, [])
        return tuple(sorted(set(ids)))
