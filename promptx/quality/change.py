"""A change the prompt asks for: where it starts and where it ends, both said, in that order.

"A flower changes from purple to orange", "a panda changes from small to big",
"the plastic toy transformed into a glass toy": a video of the change needs
the output to say the first state and, after it, the last one. A small model
keeps the subject and drops one end ("a purple flower sways in the breeze"),
or turns the thing into something else ("a glass plastic toy transformed into a
wooden spoon": the glass comes before the plastic, and the toy never becomes
glass). A state is said by its own word or a near one: a colour by its family,
a size by any word of its class ("huge", "larger", "grows"), a material by its
family, another state by a word of its stem ("brightens", "darker").
An output that says its own change with other ends, or lets a size go back the
other way once the change has ended ("growing larger" after "from large to
small"), turns it around (a ``change`` contradiction).
Not here: what else the output does to the thing (``attributes``, ``opposites``).
"""

from __future__ import annotations

import re

from .assessment import Finding
from .lexicon import Lexicon
from .materials import is_material, same_material
from .matching import matches
from .words import Word, color_of, words

__all__ = ["change_findings"]

# "changes from purple to orange", "change color from blue to orange" (a state of one or two words:
# "deep black", "flickering dimly")
_FROM_TO = re.compile(
    r"\bchang(?:es|ed|e|ing) (?:(?:its |their )?colou?rs? )?from ([a-z-]+(?: [a-z-]+)?) to "
    r"([a-z-]+(?: [a-z-]+)?)",
    re.I,
)
# "transformed into a glass toy" ("turns into" is often a street: read only before a state, "turned
# into a wooden seat")
_INTO = re.compile(
    r"\b(?:(transform|morph|chang)|turn)(?:s|es|ed|e|ing)? into (?:an? |the )?"
    r"((?:[a-z-]+ ){0,3}[a-z-]+)",
    re.I,
)
# words that send a size one way ("growing larger" undoes a change from large to small; not "no
# bigger than a teacup", "its whiskers grow longer")
_GROW = r"(?:grow|grows|growing|grew|becomes?|becoming|gets?|getting)"
_GOING = {
    "big": re.compile(rf"\b{_GROW} (?:larger|bigger)\b|\bexpands\b", re.I),  # not "ocean swells"
    "small": re.compile(rf"\b{_GROW} smaller\b|\b(?:shrinks?|shrinking|shrank|shrunk)\b", re.I),
}
_NOT_A_STATE = frozenset(
    "as when while and with under in at on after before until the a an".split()
)
# words of a size or a light, with the forms that say them
_SIZES = {
    "big": "big bigger biggest large larger largest huge giant enormous massive "
    "grows grow growing grew swells swell swelling expands expand expanding",
    "small": "small smaller smallest tiny little miniature shrinks shrink shrinking shrank shrunk",
}
_NEAR = {
    "bright": "light lit glows glow glowing brilliant luminous radiant",
    "dark": "black dim unlit shadowy",
    "dim": "dark faint",
    "faint": "dim",
    "dull": "matte",
}
_SAME_SIZE = {word: name for name, forms in _SIZES.items() for word in forms.split()}


def change_findings(prompt: str, text: str, lex: Lexicon) -> list[Finding]:
    """A ``lost_change`` finding when the output does not say the change's first state and,
    after it, its last one; a ``change`` contradiction when it turns the change around."""
    ends = _asked_change(prompt, lex)
    if ends is None:
        return []
    start, end = ends
    out = words(text)
    first = _first_said(start, out, lex)
    if first is None:
        return [_lost(start, "where the change starts")]
    last = next(
        (
            i
            for i, w in enumerate(out[first + 1 :], first + 1)
            if any(_says(s, w, lex) for s in end)
        ),
        None,
    )
    if last is None:
        return [_lost(end, "where the change ends, after where it starts")]
    return _turned_around(
        start,
        end,
        text,
        " ".join(w.text for w in out[last + 1 :]),
        {w.text for w in words(prompt)},
        lex,
    )


def _turned_around(
    start: list[str],
    end: list[str],
    text: str,
    after_end: str,
    prompt_words: set[str],
    lex: Lexicon,
) -> list[Finding]:
    """A ``change`` contradiction: the output says its own change with other ends ("change color
    from blue to orange" of a white-to-yellow change, "a wooden seat turned into a plastic one")
    or, once the end is said, a size going back the other way ("growing larger")."""
    for own in _FROM_TO.finditer(text):
        said = [[w for w in _states(part, lex) if _plain_state(w, lex)] for part in own.groups()]
        if all(said) and not (_agree(start, said[0], lex) and _agree(end, said[1], lex)):
            return [_reversed(start, end, own.group(0))]
    for own in _INTO.finditer(text):
        *describing, noun = own.group(2).lower().split()
        if not own.group(1) and noun != "one" and noun not in prompt_words:
            continue  # "as the trail turns into a dark forest": not the thing's change
        said = [w for w in describing if _plain_state(w, lex)]
        if said and not _agree(end, said, lex):
            return [_reversed(start, end, own.group(0))]
    back = {_SAME_SIZE[s] for s in start if s in _SAME_SIZE} - {
        _SAME_SIZE[e] for e in end if e in _SAME_SIZE
    }
    going = next((hit.group(0) for size in back if (hit := _GOING[size].search(after_end))), None)
    return [_reversed(start, end, going)] if going else []


def _plain_state(word: str, lex: Lexicon) -> bool:
    """A colour, a material or a size: what an output's own change may name against the prompt's."""
    return bool(color_of(word, lex)) or is_material(word) or word in _SAME_SIZE


def _agree(states: list[str], said: list[str], lex: Lexicon) -> bool:
    """Some word of ``said`` says one of ``states``."""
    return any(_says(state, word, lex) for word in words(" ".join(said)) for state in states)


def _reversed(start: list[str], end: list[str], said: str) -> Finding:
    return Finding(
        kind="contradiction",
        code="change",
        words=start + end,
        detail=f'the output turns the change from "{" ".join(start)}" to "{" ".join(end)}" '
        f'around or elsewhere ("{said}")',
    )


def _asked_change(prompt: str, lex: Lexicon) -> tuple[list[str], list[str]] | None:
    """The words of the first and the last state of the prompt's change, if it asks for one."""
    found = _FROM_TO.search(prompt)
    if found:
        start, end = _states(found.group(1), lex), _states(found.group(2), lex)
        return (start, end) if start and end else None
    # the first "transforms into ...", or "turns into" before a state ("the car turns into a
    # driveway" is none)
    found = next(
        (
            hit
            for hit in _INTO.finditer(prompt)
            if hit.group(1) or any(_state_word(w, lex) for w in hit.group(2).lower().split()[:-1])
        ),
        None,
    )
    if not found:
        return None
    *describing, noun = found.group(2).lower().split()
    end = _states(" ".join(describing), lex) or [noun]
    before = [w.text for w in words(prompt[: found.start()])]
    start = [w for w in before if _state_word(w, lex)] if describing else before[-1:]
    return (start, end) if start else None


def _states(phrase: str, lex: Lexicon) -> list[str]:
    """The words of a state phrase that say the state ("deep black": black; "white as": white)."""
    kept = []
    for word in phrase.lower().split():
        if word in _NOT_A_STATE:
            break
        kept.append(word)
    said = [w for w in kept if _state_word(w, lex)]
    return said or kept[-1:]


def _state_word(word: str, lex: Lexicon) -> bool:
    return (
        bool(color_of(word, lex))
        or is_material(word)
        or word in _SAME_SIZE
        or lex.is_modifier_word(word)
    )


def _first_said(states: list[str], out: list[Word], lex: Lexicon) -> int | None:
    return next((i for i, w in enumerate(out) if any(_says(s, w, lex) for s in states)), None)


_NEAR_HUES = (("yellow", "gold"), ("grey", "silver"))


def _says(state: str, word: Word, lex: Lexicon) -> bool:
    """``word`` of the output says ``state``."""
    said = word.text
    if said == state or state in _NEAR and said in _NEAR[state].split():
        return True
    hue = color_of(state, lex)
    if hue:
        return color_of(said, lex) == hue or any(
            hue in pair and color_of(said, lex) in pair for pair in _NEAR_HUES
        )
    if is_material(state):
        return is_material(said) and same_material(state, said)
    if state in _SAME_SIZE:
        return _SAME_SIZE.get(said) == _SAME_SIZE[state]
    if len(state) >= 3 and said.startswith(state):
        return True  # "brightens", "darker", "dimly"
    return lex.is_noun(state) and matches(state, lex.noun_lemma(said) or said, lex)


def _lost(states: list[str], what: str) -> Finding:
    return Finding(
        kind="lost",
        code="lost_change",
        words=states,
        detail=f'the output does not say {what} ("{" ".join(states)}")',
    )
