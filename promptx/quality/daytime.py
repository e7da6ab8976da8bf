"""The time of day the prompt asks for: "at sunset" must not become "soft morning light".

A prompt that names one time of day (sunrise, daytime, sunset, night) fixes the
light of the picture; an output that names a time the prompt's rules out
contradicts it ("a city street at night" -> "bright midday sun", "at sunrise"
-> "at dusk"). Prompts that name two times (a change: "from day to night",
"a timelapse from dusk to dawn") are not judged, and neither is a time the
input image's caption names or one the output changes into the asked time
("turn the daytime sky into a night sky": an edit says what it changes from).
Not here: colours and other attributes (``attributes``).
"""

from __future__ import annotations

import re

from .assessment import Finding

__all__ = ["asked_time", "clashing_words", "daytime_findings"]

# times of day and the words that say them
_TIMES = {
    "sunrise": r"sunrise|sun ?rise|dawn|daybreak|first light|early morning|morning",
    "noon": r"midday|noon|high noon",
    "day": r"daytime|daylight|sunlight|sunshine|sunlit|afternoon",
    "sunset": r"sunset|sun ?set|dusk|twilight|evening|nightfall",
    "night": r"night|nighttime|midnight|moonlit|moonlight|starlit|starry sky",
}
# the times each time rules out (a daytime sky may have morning light, sunset light may be
# called late-afternoon light)
_CLASHES = {
    "sunrise": {"sunset", "night"},
    "noon": {"sunrise", "sunset", "night"},
    "day": {"night"},
    "sunset": {"sunrise", "noon"},
    "night": {"sunrise", "noon", "day"},
}
_SAID = {name: re.compile(rf"\b(?:{words})\b", re.I) for name, words in _TIMES.items()}
_CHANGED = re.compile(
    r"\b(?:turn|change|transform|replace|shift|fade|darken|brighten)\w*\b[^.;]{0,80}?"
    r"\b(?:into|to|with)\b",
    re.I,
)
# a prompt that asks for a change of time; with two times named, also "from ... until/into ..."
_TRANSITION_WORDS = r"turns?|changes?|becomes?|timelapse|time-lapse|transition"
_TRANSITION = re.compile(rf"\b(?:{_TRANSITION_WORDS})\b", re.I)
_CHANGE = re.compile(rf"\b(?:{_TRANSITION_WORDS}|from|until|into)\b", re.I)


def asked_time(prompt: str) -> str | None:
    """The one time of day the prompt names ("sunrise", "noon", "day", "sunset", "night"), if
    it names exactly one and no change ("from day to night")."""
    asked = _times(prompt)
    return next(iter(asked)) if len(asked) == 1 and not _TRANSITION.search(prompt) else None


def clashing_words(time: str, context: str | None = None) -> frozenset[str]:
    """Single words that name a time ``time`` rules out (not those the image's caption says):
    what a constrained output may not start to write."""
    seen = _times(context or "")
    return frozenset(
        w
        for t in _CLASHES[time] - seen
        for w in re.findall(r"[a-z]+", _TIMES[t])
        if re.fullmatch(_TIMES[t], w)
    )


def daytime_findings(prompt: str, text: str, context: str | None = None) -> list[Finding]:
    """A ``time_of_day`` contradiction when the output names a time the prompt's rules out, or,
    where the prompt names none, a time the input image's caption rules out ("make it rainy" of
    a night street -> "Rainy morning")."""
    named = _times(prompt)
    asked = named or (_times(context) if context and not _TRANSITION.search(prompt) else set())
    said = _times(text)
    if len(asked) != 1 or (len(said) > 1 and _CHANGE.search(prompt)):
        return []
    if asked <= said and _CHANGED.search(text):  # "turn the daytime sky into a night sky"
        return []
    (want,) = asked
    seen = _times(context or "") if named else set()
    clashing = sorted(t for t in said if t in _CLASHES[want] and t not in seen)
    if not clashing:
        return []
    # the words as the output says them, for salvage to find their sentences
    found = sorted({hit.lower() for t in clashing for hit in _SAID[t].findall(text)})
    return [
        Finding(
            kind="contradiction",
            code="time_of_day",
            words=found,
            detail=f"the prompt asks for {want}; "
            f"the output says {', '.join(clashing)} ({', '.join(found)})",
        )
    ]


def _times(text: str) -> set[str]:
    return {name for name, said in _SAID.items() if said.search(text)}
