"""Actions the prompt asks for: "a man is running" must not become a man walking.

A video prompt is often its action ("A woman is dancing", "a horse is
running, then it starts walking"); a small model keeps the subject and swaps
the action for a stroll or a pose. The table holds ways of moving (run, walk,
march, dance, jump, climb, swim, fly) and activities (sweep, wash, cook, paint,
stretch, ...), each kept by its own verb in any form ("ran", "dancer", "dances")
or a near synonym ("sprints", "lopes", "scrubs"). Actions a good text shows by
their motions are not judged ("sleeping": "lies curled, its side rising and
falling"; "eating an ant": "snaps the ant up"), nor verbs outside the table
("playing the harp" is "plucking the strings"), except the event a prompt turns
to after "then ... starts <verb>-ing" or "then ... stops to <verb>", which must
be said whatever the verb ("starts sitting under a tree": sit), a light verb
by its object ("start making a phone call": call). The prompt asks for an
action when the verb is said as one: after "is"/"are", as a verb in -s or -ed,
or in -ing not before a noun ("a dog running", not "running water" or "a
dancing couple").
Not here: camera moves (``camera``), subjects and their attributes (``assess``).
"""

from __future__ import annotations

import re

from .assessment import Finding
from .lexicon import Lexicon

__all__ = ["action_findings"]

# an action and the words that keep it (its own forms are always enough)
_KEPT_BY = {
    verb: frozenset(words.split())
    for verb, words in {
        "run": "sprint jog race dash gallop charge bolt lope scamper scurry dart rush bound",
        "walk": "stroll stride amble wander hike march pace step trudge saunter",
        "march": "parade stride",
        "dance": "twirl waltz pirouette tango salsa ballet spin sway",
        "jump": "leap hop bound spring vault pounce",
        "climb": "scale clamber ascend scramble",
        "swim": "paddle dive glide float",
        "fly": "soar glide flutter hover flap wing float drift airborne sweep swoop wheel",
        # activities that good texts name by their verb too (none of the tuning pairs asking for one
        # leaves it out; "eat", "read", "write", "ride", "play" often shown otherwise: not judged)
        "sweep": "broom brush",
        "wash": "scrub rinse lather soap clean",
        "cook": "fry saute stir simmer grill bake roast boil",
        "chop": "cut slice dice",
        "cut": "slice chop trim carve snip saw",
        "stir": "mix whisk swirl blend",
        "paint": "brush stroke",
        "draw": "sketch pencil trace",
        "knit": "needle yarn",
        "stretch": "extend arch reach",
        "lift": "raise hoist hold heave",
        "carry": "hold hoist haul tote",
        "kick": "punt strike",
        "roll": "tumble spin turn rotate",
        "spin": "twirl rotate whirl turn pirouette",
        "clap": "applaud",
        "laugh": "giggle chuckle grin",
        "dig": "shovel excavate scoop burrow",
        "fold": "crease",
        "kneel": "knee",
        "slide": "glide skid slip",
        "surf": "wave board",
        "skate": "glide",
        "skateboard": "skate board",
    }.items()
}
# before a bare verb: "begins to dance", "will run"
_AUXILIARY = re.compile(r"\b(?:to|will|can|could|would|may|might)\s+$")
# before a verb in -ing that is the action itself: "is running", "starts walking"
_PROGRESSIVE = re.compile(r"\b(?:is|are|was|were|be|been|starts?|begins?|keeps?)\s+$")
# the event a video prompt turns to: "..., then it suddenly starts sitting under a tree"
_EVENTS = (
    re.compile(r"\bthen\b[^.;]*?\b(?:starts?|begins?)\s+([a-z]+ing)\b((?:\s+[a-z]+){0,4})"),
    re.compile(r"\bthen\b[^.;]*?\bstops?\s+to\s+([a-z]+)\b((?:\s+[a-z]+){0,4})"),
)  # "stops to drink water"
# verbs whose event is their object: "start making a phone call", "start doing the dishes"
_LIGHT = frozenset("do make get take have give".split())
_ARTICLES = frozenset("a an the their his her its some".split())
_MODIFIED = re.compile(
    r"^\s+(?:a|an|the|his|her|their|its|and|in|on|at|through|along|across|around|over|"
    r"down|up|into|toward|towards|with|to|from|by|past|behind|away|off|out|back|,|\.|$)"
)


def action_findings(prompt: str, text: str, lex: Lexicon) -> list[Finding]:
    """``lost_action``: an action of the table the prompt asks for that the output never says."""
    said = set(re.findall(r"[a-z]+", text.lower()))
    lemmas = {lex.verb_lemma(w) or w for w in said}
    lost = [
        verb
        for verb in _asked(prompt.lower(), lex)
        if not (lemmas & (_KEPT_BY[verb] | {verb}) or any(w.startswith(_stem(verb)) for w in said))
    ]
    events = _events(prompt.lower(), lex)
    nouns = {lex.noun_lemma(w) or w for w in said} if events else set()
    lost += [
        word
        for word in events
        if not (word in lemmas or word in nouns or any(w.startswith(_stem(word)) for w in said))
    ]
    if not lost:
        return []
    return [
        Finding(
            kind="lost",
            code="lost_action",
            words=lost,
            detail=f"the output lost the action of the prompt ({', '.join(lost)})",
        )
    ]


def _asked(prompt: str, lex: Lexicon) -> list[str]:
    """The table's actions the (lower-case) ``prompt`` says as actions, in order."""
    out: list[str] = []
    for hit in re.finditer(r"\b([a-z]+)\b", prompt):
        word, before, after = hit.group(1), prompt[: hit.start()], prompt[hit.end() :]
        verb = lex.verb_lemma(word)
        if verb not in _KEPT_BY or verb in out or word == verb and not _AUXILIARY.search(before):
            continue
        if verb == "run" and re.match(r"\s+out\b", after):
            continue  # "the hourglass runs out"
        if verb == "fly" and re.match(r"\s+(?:a|an|the|his|her|their|its)\b", after):
            continue  # "flying a kite": the kite flies, said of it
        if word.endswith("ing") and not _MODIFIED.match(after) and not _PROGRESSIVE.search(before):
            continue  # "running water", "a dancing couple": a modifier
        out.append(verb)
    return out


def _events(prompt: str, lex: Lexicon) -> list[str]:
    """What must be said for the events after "then ... starts <verb>-ing" (or "stops to <verb>")
    outside the table: the verb ("sitting": sit), or the object of a light verb ("making a phone
    call": call)."""
    out = []
    for hit in (hit for event in _EVENTS for hit in event.finditer(prompt)):
        verb = lex.verb_lemma(hit.group(1))
        if verb is None or verb in _KEPT_BY:
            continue  # the table's actions: ``_asked``
        if verb not in _LIGHT:
            out.append(verb)
            continue
        nouns = []
        for word in hit.group(2).split():
            if word in _ARTICLES and not nouns:
                continue
            if not lex.noun_lemma(word):
                break
            nouns.append(word)
        if nouns:
            out.append(lex.noun_lemma(nouns[-1]) or nouns[-1])  # the head of "a phone call"
    return out


def _stem(verb: str) -> str:
    """What every form of ``verb`` starts with ("danc" for dance, dancer, dancing)."""
    return verb[:-1] if verb.endswith("e") and len(verb) > 3 else verb
