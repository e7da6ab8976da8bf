"""Cheap lexical checks of a cleaned model output, each returning its problem in words.

``subject_problem`` (the prompt's subject lost), ``degenerate_problem`` (one
word over and over, a loop), ``talking_to_user`` (chatter, questions,
instructions) and ``quoted_spans``: what ``promptx.quality.assess`` builds on.
Tuned to what a tiny model gets wrong while accepting real rewrites. Not a
quality score, and it cleans nothing (``promptx.text.cleanup`` does that first).
"""

from __future__ import annotations

import math
import re
from collections import Counter

from promptx.text.cleanup import STOPWORDS, cut_repetition
from promptx.text.language import detect_language, is_cjk_char

__all__ = [
    "degenerate_problem",
    "quoted_spans",
    "subject_problem",
    "subject_words",
    "talking_to_user",
]

# Words that describe the picture rather than what is in it, and edit verbs:
# they never count as the subject.
_GENERIC = frozenset(
    """photo photograph photography picture image shot scene video clip footage view
    cinematic realistic photorealistic hyperrealistic detailed highly high quality
    resolution hd uhd masterpiece best beautiful style styled render rendering
    artwork camera lighting close closeup wide angle frame still background
    foreground make change turn replace add remove keep please create generate
    show showing depict depicting featuring feature prompt version tableau moment
    tranquil serene peaceful calm vibrant cozy dramatic epic moody dreamy stunning
    gorgeous majestic vivid colorful colourful cute lovely amazing awesome perfect
    ultra super intricate elegant scenic picturesque""".split()
)
# A subject word on the left is also kept by any word on the right.
_KINDS = {
    "person": "people man men woman women boy girl child children kid guy lady someone human "
    "individual figure player athlete dancer worker",
    "cat": "kitten kitty feline",
    "dog": "puppy pup canine hound",
    "horse": "stallion mare pony foal",
    "bird": "sparrow robin parrot eagle owl pigeon crow raven",
    "child": "kid boy girl toddler baby",
}
_KINDS["people"] = _KINDS["human"] = _KINDS["person"]
# Attributes: part of the subject, but weak evidence that it survived (any
# rewrite may say "red" or "left"); -ing and -ly words are treated the same way.
_ATTRIBUTES = frozenset(
    """red green blue yellow orange purple pink black white gray grey brown golden silver
    left right top bottom front back side middle center centre open big small large
    tiny little old new young two three four five six seven eight nine ten dozen""".split()
)
_CJK_FUNCTION = frozenset(
    "的了在是和与及着一个只条张把位名头匹辆艘架台部本座棵朵片幅"
    "这那有上中下里之其也都而或被从向到对为以于由很地得"
    "のはがをにでともへやからまでするいる를을이가은는의에와과도"
)
_QUOTES = (
    re.compile(r'"([^"\n]+)"'),
    re.compile(r"“([^”\n]+)”"),
    re.compile(r"「([^」\n]+)」"),
    re.compile(r"『([^』\n]+)』"),
    re.compile(r"‘([^’\n]+)’"),
    re.compile(r"(?<![\w'])'((?:[^'\n]|(?<=\w)'(?=\w))+?)'(?![\w'])"),
)
_CHATTY = re.compile(
    r"\b(?:i'?m sorry|i am sorry|sorry, but|as an ai\b|as a language model|i cannot\b|"
    r"i can'?t\b|i can not\b|i'?m unable|i am unable|i'?m not able|i am not able|"
    r"i apologi[sz]e|i don'?t have (?:the ability|access)|i'?m just an?\b|i will not\b|"
    r"i won'?t be able|your (?:prompt|request)\b)",
    re.I,
)
_TO_USER = re.compile(
    r"(?:^|(?<=[.!?。！？]\s)|(?<=[.!?。！？]))\s*(?:you should|you can|you could|you need to|"
    r"you may want|you might want|you will need|you'll need|please (?:provide|describe|"
    r"specify|clarify|share|give|tell|send|upload|let me)|make sure (?:to|you)|step \d|"
    r"first,? you|here are (?:some )?(?:tips|suggestions|steps|ideas)|"
    r"to (?:create|generate|make|achieve) (?:this|such|the (?:image|video|effect)))\b",
    re.I,
)
_QUESTION_TO_USER = re.compile(
    r"(?:^|(?<=[.!?。！？])\s*)(?:could|would|can|do|did|shall|should|will) you\b|"
    r"\bwhat (?:kind|type|style|sort) of\b[^.!]*\?",
    re.I,
)


def quoted_spans(text: str) -> list[str]:
    """Text inside "...", '...', “...”, ‘...’, 「...」 or 『...』, in order, unique."""
    found: list[tuple[int, str]] = []
    for rx in _QUOTES:
        found += [(m.start(), m.group(1).strip()) for m in rx.finditer(text) if m.group(1).strip()]
    out: list[str] = []
    for _, q in sorted(found):
        if q not in out:
            out.append(q)
    return out


def _singular(w: str) -> str:
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and w.endswith(("sses", "xes", "ches", "shes", "zes")):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def _stem(w: str) -> str:
    """Crude stem for matching only: cats/cat, riding/rides/ride, glowing/glow."""
    w = _singular(w)
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]  # skis, taxis: plurals _singular leaves alone
    for suffix in ("ing", "ed"):
        if len(w) > len(suffix) + 3 and w.endswith(suffix):
            w = w[: -len(suffix)]
            if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
                w = w[:-1]  # running -> run
            break
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    return w


def _stem_er(w: str) -> str:
    """Second-chance stem that also drops -er: skier/ski, cheerleader/cheerleading."""
    s = _stem(w)
    return s[:-2] if len(s) > 4 and s.endswith("er") else s


def _near(a: str, b: str) -> bool:
    """Edit distance at most 1 (a typo such as carrousel/carousel)."""
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    return a[i + (len(a) == len(b)) :] == b[i + 1 :]


def _kept(word: str, out_words: list[str], stems: set[str], er_stems: set[str]) -> bool:
    if _stem(word) in stems or _stem_er(word) in er_stems:
        return True
    if any(_stem(k) in stems for k in _KINDS.get(word, "").split()):
        return True
    return len(word) >= 6 and any(_near(word, w) for w in out_words if len(w) >= 5)


def _latin_words(text: str) -> list[str]:
    t = text.lower().replace("’", "'").replace("'s ", " ")
    return [w for w in re.findall(r"[^\W\d_]+", t) if not is_cjk_char(w[0])]


def subject_words(text: str) -> list[str]:
    """Content words of ``text`` in order, unique: lowercase, singular, without
    stopwords, words shorter than 3 letters and picture-describing words such
    as "photo", "cinematic" or "background" (those are style, not subject).
    CJK text gives its content characters (particles such as 的/の removed).
    """
    out: list[str] = []
    for w in _latin_words(text):
        w = _singular(w)
        if len(w) >= 3 and w not in STOPWORDS and w not in _GENERIC and w not in out:
            out.append(w)
    for ch in text:
        if is_cjk_char(ch) and ch not in _CJK_FUNCTION and ch not in out:
            out.append(ch)
    return out


def _is_attribute(w: str) -> bool:
    return (
        w in _ATTRIBUTES or (len(w) > 5 and w.endswith("ing")) or (len(w) > 4 and w.endswith("ly"))
    )


def _is_cjk_lang(text: str) -> bool:
    return detect_language(text) in ("zh", "ja", "ko")


def subject_problem(original: str, text: str) -> str | None:
    """Why ``text`` lost the subject of ``original``, None when kept: the first subject word, or
    half of them (3 at most), must appear (crude stems, a few kind words, one-letter typos)."""
    if _is_cjk_lang(original):
        if not _is_cjk_lang(text):
            return None  # translated by the profile: no lexical comparison possible
        want = {w for w in subject_words(original) if is_cjk_char(w[0])}
        have = {ch for ch in text if is_cjk_char(ch)}
        if not want:
            return None
        hits = len(want & have)
        if hits / len(want) >= 0.3 or (len(want) <= 3 and hits):
            return None
        return "the output lost the subject of the prompt (few of its characters appear)"
    if _is_cjk_lang(text):
        return None  # translated to CJK
    subject = [w for w in subject_words(original) if not is_cjk_char(w[0])]
    strong = [w for w in subject if not _is_attribute(w)] or subject
    if not strong:
        return None
    out_words = [_singular(w) for w in _latin_words(text)]
    stems, er_stems = {_stem(w) for w in out_words}, {_stem_er(w) for w in out_words}
    kept = [_kept(w, out_words, stems, er_stems) for w in strong]
    if kept[0] or sum(kept) >= min(3, math.ceil(len(kept) / 2)):
        return None
    subject = strong
    shown = ", ".join(f'"{w}"' for w in subject[:3])
    return f"the output lost the subject of the prompt (none of {shown} appears)"


def degenerate_problem(text: str) -> str | None:
    words = [w.lower() for w in re.findall(r"\w+", text)]
    words = [c for w in words for c in (list(w) if is_cjk_char(w[0]) else [w])]
    if len(words) >= 5:
        word, n = Counter(words).most_common(1)[0]
        share = n / len(words)
        if share > 0.4 and (word not in STOPWORDS or share > 0.6):
            return f'the output is degenerate ("{word}" is {share:.0%} of it)'
    if cut_repetition(text)[1]:
        return "the output repeats itself"
    return None


def talking_to_user(text: str) -> list[str]:
    """Problems of ``text`` that talks to the user (quoted text aside): chatter, a question,
    instructions."""
    unquoted = text.replace("’", "'")
    for q in quoted_spans(unquoted):
        unquoted = unquoted.replace(q, "")
    problems = []
    if _CHATTY.search(unquoted):
        problems.append("the output is the model chatting, not a prompt")
    if re.search(r"[?？]\W*$", unquoted) or _QUESTION_TO_USER.search(unquoted):
        problems.append("the output asks a question instead of being a prompt")
    elif _TO_USER.search(unquoted):
        problems.append("the output gives instructions to the user instead of being a prompt")
    return problems
