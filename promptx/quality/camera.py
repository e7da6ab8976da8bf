"""Camera moves the prompt asks for: kept, and not turned around ("zooms in" -> "zooms out").

A video prompt often ends with one move ("camera pans left", "zoom in",
"camera static", "the camera orbits around": every VBench-I2V image comes with
each of them; a timelapse or slow motion). The output
keeps it when it names the same move (a synonym counts: "pushes in" for a
zoom in), loses it when it names no move of that kind, and contradicts it
when it names the opposite direction or, for a static camera, any move (a
timelapse written as slow motion, or the other way round, is a ``speed``
contradiction); a move not made by a camera the output keeps still, or made in one
sentence and undone by another that keeps the camera still, is a ``camera_still``
contradiction.
Not here: subjects, colours and counts (``attributes``), the rest of the form.
"""

from __future__ import annotations

import re

from .assessment import Finding

__all__ = ["MOVE_WORDS", "asks_static_camera", "asked_view", "camera_findings", "directs_camera"]

#: words that mostly move a camera ("pan" the cookware and "tracks" in the snow aside): what a
#: static camera's output may not start to write
MOVE_WORDS = frozenset(
    """pan pans panning panned zoom zooms zooming zoomed tilt tilts tilting tilted
    dolly dollies dollying orbit orbits orbiting crane craning track tracks tracking""".split()
)

_PAN, _TILT, _ZOOM = r"pan(?:s|ning|ned)?", r"tilt(?:s|ing|ed)?", r"zoom(?:s|ing|ed)?"
_PUSH, _PULL, _DOLLY = r"push(?:es|ing|ed)?", r"pull(?:s|ing|ed)?", r"dolly(?:ing)?|dollies|dollied"
# the camera travelling along its axis: "the camera slowly glides toward the door" is a zoom in
_GO = r"mov(?:es|e|ing)|glid(?:es|e|ing)|drift(?:s|ing)?|travel(?:s|ing|ling)?"
_TOWARD = r"towards?(?! the (?:left|right)\b)"  # "toward the left" is sideways
# a move said with other verbs belongs to the camera: "the camera slowly pulls back" (not "waves
# pull back")
_CAMERA = r"\bcamera (?:\w+ ){0,2}"
# each move: how the prompt and the output may say it (a synonym counts), and its opposite
_MOVES: dict[str, tuple[str, str]] = {
    "pan left": (rf"\b{_PAN}(?: \w+ly)?[ -](?:to the |towards? the )?left\b", "pan right"),
    "pan right": (rf"\b{_PAN}(?: \w+ly)?[ -](?:to the |towards? the )?right\b", "pan left"),
    "tilt up": (rf"\b{_TILT}(?: \w+ly)?[ -]up(?:ward)?\b", "tilt down"),
    "tilt down": (rf"\b{_TILT}(?: \w+ly)?[ -]down(?:ward)?\b", "tilt up"),
    "zoom in": (
        rf"\b{_ZOOM}(?: \w+ly)?[ -]in\b|"
        rf"{_CAMERA}(?:{_PUSH} in|(?:{_DOLLY}) in|mov(?:es|ing|e) closer|"
        rf"(?:{_PUSH}|{_DOLLY}|{_GO}) (?:\w+ )?(?:{_TOWARD}|forward|closer))\b",
        "zoom out",
    ),
    "zoom out": (
        rf"\b{_ZOOM}(?: \w+ly)?[ -]out\b|{_CAMERA}(?:{_PULL} (?:back|out|away)|(?:{_DOLLY}) out|"
        rf"(?:{_GO}) (?:back(?! and forth)|backward|backwards|away))\b",
        "zoom in",
    ),
}
_STATIC = re.compile(
    r"\bcamera (?:is |stays |remains |holds )?(?:static|still|fixed|locked)\b|"
    r"\bstatic (?:camera|shot)\b",
    re.I,
)
_ANY_MOVE = re.compile(
    rf"\b(?:{_PAN}|{_TILT}|{_ZOOM}|{_DOLLY}|orbit(?:s|ing)?|crane(?:s|ing)?)\b|"
    r"\bcamera (?:slowly |gently |then )?(?:moves|pushes|pulls|glides|follows|tracks|circles|"
    r"sweeps|rises|descends|travels|drifts|lifts|lowers|climbs|rotates|spins|swings|"
    r"flies|soars|cranes|swoops)\b",
    re.I,
)
_COMPILED = {name: re.compile(rx, re.I) for name, (rx, _) in _MOVES.items()}
# a move without an opposite: asked for by the camera, kept by any word of circling
_ORBIT_ASKED = re.compile(
    r"\bcamera (?:\w+ ){0,2}(?:orbits?|orbiting|circles?|circling|revolves?|arcs?)\b|"
    r"\borbit(?:s|ing)? (?:around|shot)\b",
    re.I,
)
_ORBIT_KEPT = re.compile(
    r"\b(?:orbit\w*|circl\w+|revolv\w+|arcs? around|arcing around|wraps? around|"
    r"rotat\w+ around|sweeps? around|moves? around|travels? around|360)",
    re.I,
)


# the camera travels, said within a clause after the word ("starts at a still frame and slowly
# moves forward", "holds still as it follows the droplets"; not "toward the camera, its
# headlights sweeping across")
_TRAVELS = re.compile(
    r"\bcamera\b[^,;.]{0,60}?\b(?:moves?|moving|glides?|gliding|travels?|traveling|travelling|"
    r"follows?|following|circles?|circling|sweeps?|sweeping)\s+(?:slowly\s+|gently\s+)?"
    r"(?:forward|forwards|backward|backwards|closer|in|out|away|toward|towards|along|around|"
    r"across|past|through|after|the|it|them)\b",
    re.I,
)


# ... or after a comma in the camera's sentence, with no other subject between ("the camera holds
# still at ground level, then slowly moves toward the cliff"; not ", the fog slowly moves across")
_TRAVELS_ON = re.compile(
    r"\bcamera\b[^.;]{0,80}?,\s+(?:then\s+|and\s+)?(?:\w+ly\s+)?"
    r"(?:moves?|moving|glides?|gliding|travels?|traveling|travelling|drifts?|drifting)\s+"
    r"(?:\w+ly\s+)?(?:forward|forwards|backward|backwards|closer|in|out|away|toward|towards|"
    r"along|around|across|past|through|after)\b",
    re.I,
)


def _camera_travels(text: str) -> str | None:
    """The words that say the camera travels, if some do."""
    moved = _TRAVELS.search(text) or _TRAVELS_ON.search(text)
    return moved.group(0) if moved else None


def asks_static_camera(prompt: str) -> bool:
    """The prompt keeps the camera still ("camera static") and names no move."""
    return bool(_STATIC.search(prompt)) and not _ANY_MOVE.search(prompt)


def camera_findings(prompt: str, text: str) -> list[Finding]:
    """``lost_camera`` / ``camera`` findings for the moves the prompt asks the camera for."""
    findings = []
    for name, (_, opposite) in _MOVES.items():
        if not _COMPILED[name].search(prompt) or _COMPILED[opposite].search(prompt):
            continue
        if _COMPILED[opposite].search(text):
            findings.append(
                Finding(
                    kind="contradiction",
                    code="camera",
                    words=[name],
                    detail=f'the output turns the camera\'s "{name}" into "{opposite}"',
                )
            )
        elif not _COMPILED[name].search(text) or _kept_still(text):
            findings.append(_not_made(name, text))
    findings += _speed_findings(prompt, text)
    if _ORBIT_ASKED.search(prompt) and (not _ORBIT_KEPT.search(text) or _kept_still(text)):
        findings.append(_not_made("orbit", text))
    if asks_static_camera(prompt):
        found = _ANY_MOVE.search(text)
        moved = found.group(0) if found else _camera_travels(text)
        if moved:
            findings.append(
                Finding(
                    kind="contradiction",
                    code="camera",
                    words=["static"],
                    detail=f'the prompt keeps the camera static; the output moves it ("{moved}")',
                )
            )
    return findings


def _not_made(move: str, text: str) -> Finding:
    """A move the output does not make: lost, or contradicted by a camera it keeps still
    ("The camera stays fixed at eye level." for a tilt up: ``camera_still``)."""
    if _STATIC.search(text):
        return Finding(
            kind="contradiction",
            code="camera_still",
            words=[move],
            detail=f'the output keeps the camera still instead of the move "{move}"',
        )
    return Finding(
        kind="lost",
        code="lost_camera",
        words=[move],
        detail=f'the output lost the camera move "{move}"',
    )


def _kept_still(text: str) -> bool:
    """A sentence keeps the camera still and moves it nowhere ("The camera stays still along the
    panel edges." after an opening that pans it: which does it do?); not "The camera holds still,
    then pans right."."""
    return any(
        _STATIC.search(s) and not (_ANY_MOVE.search(s) or _camera_travels(s))
        for s in re.split(r"(?<=[.!?;])\s+", text)
    )


_SIDEWAYS = re.compile(
    r"\bcamera (?:\w+ly )?(?:moves|glides|drifts|travels) (?:\w+ly )?(?:left|right|up|down)\b", re.I
)


def directs_camera(sentence: str) -> bool:
    """The sentence moves the camera or keeps it still ("The camera moves slowly right along
    the ridges.", "The camera stays fixed."; not "The camera holds a medium shot.")."""
    if not re.search(r"\bcamera\b", sentence, re.I):
        return False
    return bool(
        _STATIC.search(sentence)
        or _ANY_MOVE.search(sentence)
        or _camera_travels(sentence)
        or _SIDEWAYS.search(sentence)
    )


_TIMELAPSE = re.compile(r"\btime[- ]?lapse\b", re.I)
_SLOW_MOTION = re.compile(r"\bslow[- ]motion\b|\bslow-mo\b", re.I)


_SPEEDS = (
    ("timelapse", _TIMELAPSE, "slow motion", _SLOW_MOTION),
    ("slow motion", _SLOW_MOTION, "timelapse", _TIMELAPSE),
)


# a speed kept in other words: "sped up over hours", "slowed down"
# (a timelapse kept by any word starting so: "time-lapses" too)
_SPEED_KEPT = {
    "timelapse": re.compile(
        r"\btime[- ]?lapse|\bsped[- ]up|\bspeeds? up|\bfast[- ]forward|\baccelerated|"
        r"\bover (?:the course of )?(?:hours|days|weeks|months|years)\b",
        re.I,
    ),
    "slow motion": re.compile(rf"{_SLOW_MOTION.pattern}|\bslowed[- ]down\b", re.I),
}


def _speed_findings(prompt: str, text: str) -> list[Finding]:
    """A timelapse asked for and written as slow motion, or the other way round (``speed``), or
    not said at all (``lost_camera``: every tuning pair and accepted label asking for one keeps
    it)."""
    for name, asked, other_name, other in _SPEEDS:
        if not asked.search(prompt) or other.search(prompt):
            continue
        if other.search(text) and not asked.search(text):
            return [
                Finding(
                    kind="contradiction",
                    code="speed",
                    words=[name],
                    detail=f"the prompt asks for {name}; the output says {other_name}",
                )
            ]
        if not _SPEED_KEPT[name].search(text):
            return [
                Finding(
                    kind="lost",
                    code="lost_camera",
                    words=[name],
                    detail=f"the output lost the prompt's {name}",
                )
            ]
    return []


# a view the prompt names ("a cup on the left of a fork, front view"), and the words that keep it
_VIEWS = {
    "front view": r"\bfront(?:al)?[- ](?:view|shot|angle|on)\b|\bfrom the front\b|\bhead-on\b",
    "side view": r"\bside[- ](?:view|shot|angle|on)\b|\bfrom the side\b|\bin profile\b",
    "top view": r"\btop[- ](?:view|down)\b|\bfrom above\b|\boverhead\b",
    "aerial view": r"\baerial\b|\bfrom above\b|\bbird'?s[- ]eye\b|\bdrone\b",
    "overhead view": r"\boverhead\b|\bfrom above\b|\btop[- ](?:view|down)\b",
    "bird's-eye view": r"\bbird'?s[- ]eye\b|\baerial\b|\bfrom above\b",
}
_VIEW_ASKED = re.compile(r"\b(front|side|top|aerial|overhead|bird'?s[- ]eye) view\b", re.I)


def asked_view(prompt: str, text: str) -> str | None:
    """The view the prompt names ("front view") when ``text`` does not say it, else None."""
    found = _VIEW_ASKED.search(prompt)
    if not found:
        return None
    name = found.group(0).lower().replace("birds", "bird's").replace("bird's eye", "bird's-eye")
    kept = _VIEWS.get(name)
    return None if kept is None or re.search(kept, text, re.I) else name
