"""Keep a good prompt whose only flaw is a few sentences: drop the sentences that an
assessment's findings point at (a sentence that adds a subject, addresses the reader,
speaks in the first person, quotes speech, talks to the user, calls a painting a
photograph or names a time of day the prompt rules out), so one stray sentence does
not cost a new attempt.

Not here: deciding whether the rest is good (the caller assesses it again).
"""

from __future__ import annotations

import re

from promptx.text.validate import talking_to_user

from .assessment import Assessment
from .form import FIRST_PERSON
from .lexicon import lexicon

__all__ = ["drop_offending_sentences"]

_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")
_DROPPABLE = frozenset({"second_person", "first_person", "dialogue", "talks_to_user"})
_WORDED = frozenset({"medium", "time_of_day"})    # contradictions said by words a sentence can lose


def drop_offending_sentences(text: str, assessment: Assessment) -> str:
    """``text`` without the sentences the findings name; "" when nothing would be left, and
    ``text`` unchanged when a finding cannot be mended by dropping sentences."""
    if any(f.kind == "lost" or f.kind == "contradiction" and f.code not in _WORDED for f in assessment.findings):
        return text
    codes = {f.code for f in assessment.findings}
    if codes - _DROPPABLE and not all(f.kind == "added_subject" or f.code in _DROPPABLE | _WORDED
                                      for f in assessment.findings):
        return text
    # the words to drop a sentence for: added subjects, a photo word that makes a painting a photo,
    # a time of day the prompt rules out ("Soft morning light from above." in a night scene)
    added = {w for f in assessment.findings if f.kind == "added_subject" or f.code in _WORDED for w in f.words}
    kept = [s.strip() for s in _SENTENCE_BREAK.split(text.strip()) if s.strip() and not _offends(s, added, codes)]
    return re.sub(r"(?<=[。！？]) ", "", " ".join(kept))


def _offends(sentence: str, added: set[str], codes: set[str]) -> bool:
    lex = lexicon()
    low = sentence.lower()
    if "second_person" in codes and re.search(r"\byou(?:r|rs|rself)?\b", low):
        return True
    if "dialogue" in codes and re.search(r"[\"“”]", sentence):
        return True
    if "talks_to_user" in codes and talking_to_user(sentence):
        return True
    if "first_person" in codes and FIRST_PERSON.search(sentence):
        return True
    if any(w in sentence for w in added if not w.isascii() or not w.isalpha()):
        return True                              # Chinese ("一只黑色的大狗"), made-up quoted text
    if any(" " in w and w in low for w in added):
        return True                              # "early morning", "broad daylight"
    return any(w in added or lex.noun_lemma(w) in added for w in re.findall(r"[a-z]+", low))
