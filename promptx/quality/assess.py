"""``assess(prompt, text, profile)``: is ``text`` a faithful enhancement of ``prompt``?

Findings, by kind:
- lost: a subject, colour, count, spatial relation or quoted text of the
  prompt is missing (matched by lemma, synonym and WordNet hypernymy);
- added_subject: a person, animal, vehicle or creature the prompt neither
  names nor licenses (``licensing``);
- contradiction: a kept subject's colour or count changed;
- form: see ``form``.
Pure Python over the shipped WordNet extract; ~10 ms per text once loaded (~0.3 s).
Not here: cleaning text (``cleanup``) or what to do about a failure
(``enhancer`` retries and falls back).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from promptx.text.cleanup import STOPWORDS
from promptx.text.language import detect_language, has_cjk
from promptx.text.validate import quoted_spans, subject_problem

from .assessment import Assessment, Finding
from .form import form_findings
from .lexicon import Lexicon, lexicon
from .licensing import PERSON_PRONOUNS, Licence
from .mentions import PICTURE_WORDS, Mention, color_of, mentions, words

if TYPE_CHECKING:
    from promptx.profiles.schema import Profile

__all__ = ["assess"]

# lexicographer files whose nouns name things that must survive the rewrite
_CONCRETE = frozenset({"noun.animal", "noun.artifact", "noun.person", "noun.food", "noun.plant",
                       "noun.object", "noun.body", "noun.substance", "noun.location",
                       "noun.phenomenon", "noun.shape"})
# spatial relations: how the prompt says it, and the words that keep it in the output
_RELATIONS = {
    "left": (r"\b(?:to|on|at) the left\b|\bleft of\b", ("left",)),
    "right": (r"\b(?:to|on|at) the right\b|\bright of\b", ("right",)),
    "above": (r"\babove\b|\bon top of\b", ("above", "over", "top", "atop")),
    "below": (r"\b(?:below|under|beneath|underneath)\b", ("below", "under", "beneath", "underneath")),
    "behind": (r"\bbehind\b", ("behind", "back")),
    "in front": (r"\bin front of\b", ("front", "before", "ahead")),
    "beside": (r"\bbeside\b|\bnext to\b", ("beside", "next", "side", "alongside")),
}
# colour families that describe the same colour
_SAME_COLOR = [{"grey", "silver", "white"}, {"yellow", "gold"}, {"dark", "black", "brown"},
               {"red", "pink"}, {"purple", "pink"}, {"orange", "yellow"}]


def assess(prompt: str, text: str, profile: "Profile | None" = None, *, context: str | None = None,
           language: str | None = None) -> Assessment:
    """Assess ``text`` (a cleaned output) as an enhancement of ``prompt`` for ``profile``
    (a ``Profile``; None: a generic English paragraph). ``context`` describes the input
    image (i2v/i2i caption): subjects it names are licensed too; without it an image
    profile's output may name what the image shows, so only subjects it explicitly adds
    ("add a woman on the left", "a dog enters the frame") are judged.
    ``language`` ("english" or "keep") overrides the profile's language policy."""
    lex = lexicon()
    if profile is None:
        fmt, policy, wants_image, budget = "paragraph", "english", False, None
    else:
        fmt, policy, wants_image, budget = profile.format, profile.language, profile.wants_image, profile.length
    language = language or policy
    unseen_image = wants_image and not context
    findings = form_findings(prompt, text, fmt=fmt, language=language,
                             min_words=budget.min_words if budget else None,
                             max_words=budget.max_words if budget else None, lex=lex)
    findings += _quote_findings(prompt, text)
    kept: list[str] = []
    if text.strip() and _comparable(prompt, text):
        out_words = words(text)
        src_words = words(prompt)
        source, output = mentions(src_words, lex), mentions(out_words, lex)
        kept, lost = _kept_subjects(source, output, out_words, lex)
        findings += lost
        attributes = _attribute_findings(source, output, src_words, out_words, lex)
        if profile is not None and profile.task == "i2i":   # an edit names the old colour and count too
            attributes = [f for f in attributes if f.kind != "contradiction"]
        findings += attributes
        findings += _relation_findings(prompt, text)
        licence = Licence.of(prompt, context, lex)
        if unseen_image:      # what the image shows cannot be judged; what the text adds to it can
            findings += _added_subjects(_explicitly_added(output, out_words), out_words, licence, lex,
                                        pronouns=False)
        else:
            findings += _added_subjects(output, out_words, licence, lex)
    elif text.strip() and has_cjk(prompt) and has_cjk(text):
        lost = subject_problem(prompt, text)       # CJK on both sides: characters must survive
        if lost:
            findings.append(Finding(kind="lost", code="lost_subject", detail=lost))
    return Assessment(verdict="fail" if findings else "pass", findings=findings, kept=kept)


def _comparable(prompt: str, text: str) -> bool:
    """Lexical comparison needs English on both sides (a translation is judged on form only)."""
    return (detect_language(prompt) in ("en", "other") and detect_language(text) in ("en", "other")
            and not _latin_foreign(prompt))


# function words of the Latin-script languages prompts come in, that English does not use
_FOREIGN_WORDS = frozenset("""der die das und den dem ein eine einer mit auf im vom zum zur le la les
    et des du une sur avec dans el los las y del al una con en por para il lo gli di della nel con
    os as uma um do da dos das em com no na""".split())
_ENGLISH_WORDS = frozenset("the a an and of in on with at to by is are".split())


def _latin_foreign(text: str) -> bool:
    """A prompt in German, French, Spanish, Italian or Portuguese: its words are not English
    nouns, so comparing them would call each article a lost subject."""
    ws = re.findall(r"[a-zà-ÿ]+", text.lower())
    foreign = sum(w in _FOREIGN_WORDS for w in ws)
    return foreign >= 1 and foreign > sum(w in _ENGLISH_WORDS for w in ws)


def _quote_findings(prompt: str, text: str) -> list[Finding]:
    flat = re.sub(r"\s+", " ", text)
    return [Finding(kind="lost", code="lost_quote", words=[q],
                    detail=f'quoted text "{q}" from the prompt is missing from the output')
            for q in quoted_spans(prompt) if re.sub(r"\s+", " ", q) not in flat]


_AGE = re.compile(r"^(?:[a-z0-9]+-)?year-olds?$")
# salient only in a compound: a toy balloon is a thing, a hot air balloon a vehicle
_COMPOUNDS = {("air", "balloon"): "vehicle", ("hot-air", "balloon"): "vehicle"}
# "an empty beach with nobody around": nothing to keep
_NEGATIVES = frozenset("nobody nothing none noone no-one".split())


def _subject_nouns(source: list[Mention], lex: Lexicon) -> list[Mention]:
    """The prompt's concrete nouns, first mention of each."""
    seen, out = set(), []
    for m in source:
        if (m.lemma in seen or m.lemma in PICTURE_WORDS or m.lemma in STOPWORDS or m.lemma in _NEGATIVES
                or m.modifier and not lex.salient_class(m.lemma)):
            continue
        if lex.lexname(m.lemma) in _CONCRETE or lex.salient_class(m.lemma):
            seen.add(m.lemma)
            out.append(m)
    return out


def _matches(given: str, other: str, lex: Lexicon) -> bool:
    """``other`` in the output keeps ``given`` of the prompt."""
    if lex.licenses(given, other):
        return True
    if lex.salient_class(given):
        return False                     # a cat is not kept by a dog, however close
    return lex.related(given, other) or lex.shares_a_sense(given, other)


def _kept_subjects(source, output, out_words, lex) -> tuple[list[str], list[Finding]]:
    kept, lost = [], []
    out_lemmas = {m.lemma for m in output}
    parts = {p for w in out_words for p in re.split(r"[-']", w.text) if len(p) >= 4}
    for m in _subject_nouns(source, lex):
        # "skateboard" keeps "skateboarding" and back, but "bath" does not keep "bathroom"
        if (any(_matches(m.lemma, o, lex) for o in out_lemmas)
                or any(p.startswith(m.lemma) or m.lemma.startswith(p) and len(p) >= len(m.lemma) - 3
                       for p in parts if len(m.lemma) >= 4)):
            kept.append(m.lemma)
        else:
            lost.append(m.lemma)
    if not lost:
        return kept, []
    shown = ", ".join(f'"{w}"' for w in lost[:4])
    return kept, [Finding(kind="lost", code="lost_subject", words=lost,
                          detail=f"the output lost {shown} from the prompt")]


def _same_family(a: set[str], b: set[str]) -> bool:
    if a & b:
        return True
    return any(x in group and y in group for group in _SAME_COLOR for x in a for y in b)


def _attribute_findings(source, output, src_words, out_words, lex) -> list[Finding]:
    """Colours and counts of the prompt's nouns: kept, or contradicted."""
    findings: list[Finding] = []
    text_colors = {color_of(w.text, lex) for w in out_words} - {None}
    for m in source:
        same = [o for o in output if o.lemma == m.lemma or _matches(m.lemma, o.lemma, lex)]
        if m.colors:
            # every colour the prompt gives this noun ("a red apple and a green apple": both)
            given = set().union(*(s.colors for s in source if s.lemma == m.lemma))
            stated = [o.colors for o in same if o.colors]
            # the same noun said again in a plain colour word: "silver hair ... her dark hair"
            restated = [_plain_colors(out_words, o.position, lex) for o in output
                        if o.lemma == m.lemma and not o.modifier and not _before_noun(out_words, o.position, lex)]
            plain_given = set().union(*(_plain_colors(src_words, s.position, lex) for s in source
                                        if s.lemma == m.lemma))
            clashing = [c for c in restated if c and plain_given and not _same_family(given, c)]
            if clashing:        # one restatement in another colour is enough: "silver hair ... dark hair"
                findings.append(_contradiction("color", m, sorted(clashing[0])))
            elif not stated and not _same_family(set(m.colors), text_colors):
                findings.append(Finding(kind="lost", code="lost_color", words=[m.lemma, *sorted(m.colors)],
                                        detail=f'the output lost the colour of "{m.lemma}" '
                                               f'({", ".join(sorted(m.colors))})'))
        if m.count is not None:
            counts = {o.count for o in same if o.count is not None}
            if counts and m.count not in counts and not (m.count == 1 and counts <= {1}):
                findings.append(_contradiction("count", m, sorted(counts)))
    return _unique(findings)


# colour words that say nothing else (not "wine", "copper", "emerald": those name things too)
_PLAIN_COLORS = frozenset("""red orange yellow green blue purple violet pink brown black white grey gray silver
    gold golden blond blonde dark""".split())


def _plain_colors(ws, position: int, lex: Lexicon) -> set[str]:
    """Colour families of the plain colour words right before a noun ("her dark hair"), in its phrase."""
    out = set()
    for w in reversed(ws[max(0, position - 3): position]):
        if w.phrase != ws[position].phrase or w.text in ("a", "an", "the", "and", "of", "with"):
            break
        if w.text in _PLAIN_COLORS:
            out.add(color_of(w.text, lex))
    return out - {None}


def _before_noun(ws, position: int, lex: Lexicon) -> bool:
    """The next word may be the head noun: "a white cake stand" describes the stand, not a cake
    ("the blue car gleams": a verb in -s follows, the car is the head)."""
    nxt = ws[position + 1] if position + 1 < len(ws) else None
    if not nxt or nxt.phrase != ws[position].phrase:
        return False
    if not lex.noun_lemma(nxt.text) or nxt.text in _FUNCTION_WORDS:
        return False
    return not (nxt.text.endswith("s") and lex.verb_lemma(nxt.text))


_FUNCTION_WORDS = frozenset("is are was were has have and or with in on at of to".split())


def _contradiction(what: str, m: Mention, got) -> Finding:
    want = sorted(m.colors) if what == "color" else [m.count]
    return Finding(kind="contradiction", code=what, words=[m.lemma],
                   detail=f'the output changes the {what} of "{m.lemma}" ({want} -> {got})')


def _relation_findings(prompt: str, text: str) -> list[Finding]:
    have = set(re.findall(r"[a-z]+", text.lower()))
    lost = [name for name, (said, kept) in _RELATIONS.items()
            if re.search(said, prompt.lower()) and not have & set(kept)]
    if not lost:
        return []
    return [Finding(kind="lost", code="lost_relation", words=lost,
                    detail=f'the output lost the spatial relation ({", ".join(lost)}) of the prompt')]


# words that bring something new into an image: "add a man", "a dog walks into the frame"
_ADDING_VERBS = frozenset("add adds adding added insert inserts inserting inserted introduce introduces introducing "
                          "include includes including place placing put putting".split())
_ENTERING = re.compile(r"\b(?:enters?|entering|walks? into|comes? into|appears?|appearing|joins?|joining)\b")


_NEW = frozenset("a an another some several more two three four five six seven eight nine ten".split())


def _explicitly_added(output: list[Mention], ws) -> list[Mention]:
    """Mentions the text adds to an unseen image: a new one ("a", "another", a number; not "the")
    as the object of an adding verb (within four words, same phrase), or as the subject of
    "enters/appears/joins"."""
    out = []
    for m in output:
        before = [w.text for w in ws[max(0, m.position - 4): m.position] if w.phrase == ws[m.position].phrase]
        verb = max((i for i, w in enumerate(before) if w in _ADDING_VERBS), default=None)
        new = any(w in _NEW for w in (before[verb + 1:] if verb is not None else before[-3:]))
        phrase = " ".join(w.text for w in ws[m.position + 1:] if w.phrase == ws[m.position].phrase)
        if new and (verb is not None or _ENTERING.match(phrase[:40])):
            out.append(m)
    return out


def _added_subjects(output: list[Mention], ws, licence: Licence, lex: Lexicon, *,
                    pronouns: bool = True) -> list[Finding]:
    added: dict[str, str] = {}
    if pronouns and not licence.animate:
        for w in ws:
            if (w.text in PERSON_PRONOUNS or _AGE.match(w.text)) and not w.quoted:
                added[w.text] = "person"         # "she", "someone", "a 12-year-old"
                break
    for m in output:
        cls = lex.salient_class(m.lemma) or _COMPOUNDS.get((ws[m.position - 1].text if m.position else "", m.lemma))
        if not cls or m.modifier or m.depicted or m.quoted or m.lemma in added or m.lemma in PICTURE_WORDS:
            continue                     # "the whole tableau": the picture, not a group of people
        counted = m.count is not None and 1 < m.count < 10
        if not licence.allows(m.lemma, lex, plural=ws[m.position].text != m.lemma, counted=counted):
            added[m.lemma] = cls
    if not added:
        return []
    return [Finding(kind="added_subject", code=f"added_{cls}", words=[w for w, c in added.items() if c == cls],
                    detail=f"the output adds {'an' if cls[0] in 'aeiou' else 'a'} {cls} the prompt does not have: "
                           + ", ".join(f'"{w}"' for w, c in added.items() if c == cls))
            for cls in dict.fromkeys(added.values())]


def _unique(findings: list[Finding]) -> list[Finding]:
    seen, out = set(), []
    for f in findings:
        if f.detail not in seen:
            seen.add(f.detail)
            out.append(f)
    return out
