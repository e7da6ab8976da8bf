"""Keep a good prompt whose only flaw is a few sentences: drop the sentences that an
assessment's findings point at (a sentence that adds a subject, addresses the reader,
speaks in the first person, quotes speech, talks to the user, calls a painting a
photograph or names a time of day the prompt rules out), or add the one that says a
camera move or speed the prompt asked for and the text never made (dropping those that
direct the camera otherwise), so one stray or missing sentence does not cost a new
attempt; and close a text with the view its prompt names ("front view") when it does
not say it.

Not here: deciding whether the rest is good (the caller assesses it again).
"""

from __future__ import annotations

import re

from promptx.text.language import has_cjk
from promptx.text.validate import talking_to_user

from .assessment import Assessment
from .camera import asked_view, directs_camera
from .form import FIRST_PERSON
from .lexicon import lexicon

__all__ = ["drop_offending_sentences", "say_asked_view", "say_lost_camera"]

_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")
_DROPPABLE = frozenset({"second_person", "first_person", "dialogue", "talks_to_user"})
_WORDED = frozenset({"medium", "time_of_day"})  # contradictions said by words a sentence can lose
# how a closing sentence says each move or speed ``camera`` finds lost (its own patterns keep them)
_CAMERA_SENTENCES = {
    "pan left": "The camera pans slowly to the left.",
    "pan right": "The camera pans slowly to the right.",
    "tilt up": "The camera tilts slowly upward.",
    "tilt down": "The camera tilts slowly downward.",
    "zoom in": "The camera slowly zooms in.",
    "zoom out": "The camera slowly zooms out.",
    "orbit": "The camera orbits around the scene.",
    "timelapse": "The whole scene plays as a timelapse.",
    "slow motion": "Everything moves in slow motion.",
}
_SPEEDS = frozenset({"timelapse", "slow motion"})


def drop_offending_sentences(text: str, assessment: Assessment) -> str:
    """``text`` without the sentences the findings name; "" when nothing would be left, and
    ``text`` unchanged when a finding cannot be mended by dropping sentences."""
    if any(
        f.kind == "lost" or f.kind == "contradiction" and f.code not in _WORDED
        for f in assessment.findings
    ):
        return text
    codes = {f.code for f in assessment.findings}
    if codes - _DROPPABLE and not all(
        f.kind == "added_subject" or f.code in _DROPPABLE | _WORDED for f in assessment.findings
    ):
        return text
    # the words to drop a sentence for: added subjects, a photo word that makes a painting a photo,
    # a time of day the prompt rules out ("Soft morning light from above." in a night scene)
    added = {
        w
        for f in assessment.findings
        if f.kind == "added_subject" or f.code in _WORDED
        for w in f.words
    }
    kept = [
        s.strip()
        for s in _SENTENCE_BREAK.split(text.strip())
        if s.strip() and not _offends(s, added, codes)
    ]
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
        return True  # Chinese ("一只黑色的大狗"), made-up quoted text
    if any(" " in w and w in low for w in added):
        return True  # "early morning", "broad daylight"
    return any(w in added or lex.noun_lemma(w) in added for w in re.findall(r"[a-z]+", low))


def say_lost_camera(text: str, assessment: Assessment) -> str:
    """``text`` with a closing sentence for each camera move or speed it lost (and, for a move,
    without the sentences that move the camera otherwise or keep it still), when such losses
    are all that is wrong with an English paragraph; else ``text`` unchanged ("" when nothing
    would be left)."""
    findings = assessment.findings
    lost = [w for f in findings for w in f.words]
    if (
        not findings
        or any(f.code not in ("lost_camera", "camera_still") for f in findings)
        or has_cjk(text)
    ):
        return text
    if any(move not in _CAMERA_SENTENCES for move in lost):
        return text
    moves = (
        set(lost) - _SPEEDS
    )  # a move replaces what the text made the camera do; a speed does not
    kept = [
        s.strip()
        for s in _SENTENCE_BREAK.split(text.strip())
        if s.strip() and not (moves and directs_camera(s))
    ]
    if not kept:
        return ""
    return " ".join(
        [_closed(" ".join(kept)), *(_CAMERA_SENTENCES[move] for move in dict.fromkeys(lost))]
    )


def say_asked_view(prompt: str, text: str) -> str:
    """``text`` closed with the view the prompt names ("Front view.") when it does not say
    it, for an English paragraph; else ``text`` unchanged."""
    view = asked_view(prompt, text)
    if view is None or not text.strip() or has_cjk(text):
        return text
    return f"{_closed(text)} {view[0].upper()}{view[1:]}."


def _closed(text: str) -> str:
    """``text`` ending with a full stop (or its own "!" or "?")."""
    body = text.rstrip()
    return body if body.endswith((".", "!", "?")) else body + "."
