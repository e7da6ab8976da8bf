"""``assess(prompt, text, profile)``: is ``text`` a faithful enhancement of ``prompt``?

Findings, by kind:
- lost: a subject, colour, material, count, number ("42", "route 66"),
  spatial relation, way of moving ("running", ``actions``), the ends of a
  change (``change``), a name the lexicon does not know in a prompt about
  nothing else (``names``) or quoted text of the prompt is missing (matched by
  lemma, synonym and WordNet hypernymy);
  with an empty prompt, the subjects of the image's caption;
- added_subject: a person, animal, vehicle or creature the prompt neither
  names nor licenses (``licensing``);
- contradiction: a kept subject's colour, material or count changed, in the
  prompt or in the caption of its image; one thing made several
  (``plurality``); its shape, size, texture, age or state said the other way
  (``opposites``); an animal made another or a child an adult (``kinds``); a
  left/right or over/under relation turned around; a painting or sketch called a photograph
  (``medium``); another time of day (``daytime``);
- form: see ``form``.
Colours, counts and materials live in ``attributes``, spatial relations in
``relations``, Chinese text in ``cjk``; this module keeps subjects and judges
what the text adds. Pure Python over the shipped WordNet extract; ~10 ms per
text once loaded (~0.3 s). Not here: cleaning text (``cleanup``) or what to do
about a failure (``enhancer`` retries and falls back).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from promptx.text.cleanup import STOPWORDS
from promptx.text.language import detect_language, has_cjk, latin_foreign
from promptx.text.validate import quoted_spans, subject_problem

from .actions import action_findings
from .assessment import Assessment, Finding
from .attributes import attribute_findings, caption_contradictions
from .camera import camera_findings
from .change import change_findings
from .cjk import cjk_added_subjects
from .daytime import daytime_findings
from .kinds import kind_findings
from .form import FIRST_PERSON, SECOND_PERSON, form_findings
from .lexicon import Lexicon, lexicon
from .licensing import PERSON_PRONOUNS, Licence
from .matching import matches
from .medium import medium_findings
from .mentions import PICTURE_WORDS, Mention, mentions
from .names import name_findings
from .numbers import number_findings
from .opposites import opposite_findings
from .plurality import plurality_findings
from .presence import depicted_at
from .relations import relation_findings
from .words import words

if TYPE_CHECKING:
    from promptx.profiles.schema import Profile

__all__ = ["assess"]

# lexicographer files whose nouns name things that must survive the rewrite
_CONCRETE = frozenset(
    {
        "noun.animal",
        "noun.artifact",
        "noun.person",
        "noun.food",
        "noun.plant",
        "noun.object",
        "noun.body",
        "noun.substance",
        "noun.location",
        "noun.phenomenon",
        "noun.shape",
    }
)
# things to see whose first WordNet sense is a message or a possession ("a book": the work;
# "cash": wealth): a picture of one must still show it (``matching.KEPT_BY`` lists the words
# that keep some of them: "a worn copy", "a folded broadsheet")
_VISIBLE_THINGS = frozenset(
    """book poster newspaper magazine menu postcard trophy ticket tattoo cash money
    coin banknote stamp sticker""".split()
)  # not a sign or a logo: their quoted text is what must stay


def assess(
    prompt: str,
    text: str,
    profile: "Profile | None" = None,
    *,
    context: str | None = None,
    language: str | None = None,
) -> Assessment:
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
        fmt, policy, wants_image, budget = (
            profile.format,
            profile.language,
            profile.wants_image,
            profile.length,
        )
    language = language or policy
    unseen_image = wants_image and not context
    findings = form_findings(
        prompt,
        text,
        fmt=fmt,
        language=language,
        min_words=budget.min_words if budget else None,
        max_words=budget.max_words if budget else None,
        lex=lex,
    )
    findings += _quote_findings(prompt, text) + _added_quotes(prompt, context, text)
    findings += number_findings(prompt, text, quoted_spans(prompt)) + camera_findings(prompt, text)
    kept: list[str] = []
    captioned = (
        bool(context) and not prompt.strip()
    )  # animate or describe the image: keep its main subject
    edit = profile is not None and profile.task == "i2i"
    if not edit:  # an edit names the input's medium: "turn the photo into ..."
        findings += medium_findings(prompt, text)
    findings += daytime_findings(prompt, text, context)
    if text.strip() and _comparable(context if captioned else prompt, text):
        kept, lexical = _lexical_findings(
            prompt, text, context, lex, captioned=captioned, edit=edit, unseen_image=unseen_image
        )
        findings += lexical
        findings += (
            [] if edit else action_findings(prompt, text, lex) + change_findings(prompt, text, lex)
        )
    elif text.strip() and has_cjk(prompt) and has_cjk(text):
        lost = subject_problem(prompt, text)  # CJK on both sides: characters must survive
        if lost:
            findings.append(Finding(kind="lost", code="lost_subject", detail=lost))
        if not unseen_image and (
            not context or has_cjk(context)
        ):  # an English caption licenses unseen
            findings += cjk_added_subjects(f"{prompt} {context or ''}", text)
    return Assessment(verdict="fail" if findings else "pass", findings=findings, kept=kept)


def _lexical_findings(
    prompt: str,
    text: str,
    context: str | None,
    lex: Lexicon,
    *,
    captioned: bool,
    edit: bool,
    unseen_image: bool,
) -> tuple[list[str], list[Finding]]:
    """The kept subjects, and the findings of comparing English words: subjects, attributes and
    relations of the prompt (of the caption's main subject when the prompt is empty), the
    caption's attributes, and the subjects the text adds."""
    out_words = words(text)
    src_words = words(context if captioned else prompt)
    source, output = mentions(src_words, lex), mentions(out_words, lex)
    kept, findings = _kept_subjects(source, output, src_words, out_words, lex, first_only=captioned)
    if not captioned:
        attributes = attribute_findings(source, output, src_words, out_words, lex)
        attributes += plurality_findings(source, output, src_words, out_words, lex)
        attributes += opposite_findings(source, output, src_words, out_words)
        attributes += kind_findings(prompt, text, source, output, out_words, lex)
        if edit:  # an edit names the old colour and count too
            attributes = [f for f in attributes if f.kind != "contradiction"]
        findings += attributes + relation_findings(prompt, text, source, out_words, lex)
        findings += name_findings(prompt, text, source, lex)
    if context:  # what the image shows, unless an edit changes it
        findings += caption_contradictions(
            context, [] if captioned else source, text, lex, edit=edit
        )
    licence = Licence.of(prompt, context, lex)
    if unseen_image:  # what the image shows cannot be judged; what the text adds to it can
        findings += _added_subjects(
            _explicitly_added(output, out_words), out_words, licence, lex, pronouns=False
        )
    else:
        findings += _added_subjects(output, out_words, licence, lex)
    return kept, findings


def _comparable(prompt: str, text: str) -> bool:
    """Lexical comparison needs English on both sides (a translation is judged on form only)."""
    return (
        detect_language(prompt) in ("en", "other")
        and detect_language(text) in ("en", "other")
        and not latin_foreign(prompt)
    )


def _added_quotes(prompt: str, context: str | None, text: str) -> list[Finding]:
    """Quoted text the output makes up, two pieces or more (a generator draws them: a shelf of
    invented titles, a screen full of made-up words; one book title is a detail); text the
    prompt or the image's caption says, quoted or not, is licensed, and quoted speech is the
    form check's ``dialogue``."""
    said = re.sub(r"\s+", " ", f"{prompt} {context or ''}").lower()
    added = [
        q
        for q in quoted_spans(text)
        if re.sub(r"\s+", " ", q).lower() not in said and not _speech(q)
    ]
    if len(added) < 2:
        return []
    shown = ", ".join(f'"{q}"' for q in added[:3])
    return [
        Finding(
            kind="added_subject",
            code="added_text",
            words=added,
            detail=f"the output makes up text to draw that the prompt does not have ({shown})",
        )
    ]


def _speech(quoted: str) -> bool:
    """Quoted words that are somebody speaking: a sentence's end, or a speaker or a listener."""
    return quoted[-1:] in ".!?," or bool(
        FIRST_PERSON.search(quoted) or SECOND_PERSON.search(quoted)
    )


def _quote_findings(prompt: str, text: str) -> list[Finding]:
    flat = re.sub(r"\s+", " ", text)
    return [
        Finding(
            kind="lost",
            code="lost_quote",
            words=[q],
            detail=f'quoted text "{q}" from the prompt is missing from the output',
        )
        for q in quoted_spans(prompt)
        if re.sub(r"\s+", " ", q) not in flat
    ]


_AGE = re.compile(r"^(?:[a-z0-9]+-)?year-olds?$")
# salient only in a compound: a toy balloon is a thing, a hot air balloon a vehicle
_COMPOUNDS = {("air", "balloon"): "vehicle", ("hot-air", "balloon"): "vehicle"}
# "an empty beach with nobody around": nothing to keep
_NEGATIVES = frozenset("nobody nothing none noone no-one".split())


def _subject_nouns(source: list[Mention], lex: Lexicon) -> list[Mention]:
    """The prompt's concrete nouns, first mention of each."""
    seen, out = set(), []
    for m in source:
        if (
            m.lemma in seen
            or m.lemma in PICTURE_WORDS
            or m.lemma in STOPWORDS
            or m.lemma in _NEGATIVES
            or m.modifier
            and not lex.salient_class(m.lemma)
        ):
            continue
        if (
            lex.lexname(m.lemma) in _CONCRETE
            or lex.salient_class(m.lemma)
            or m.lemma in _VISIBLE_THINGS
        ):
            seen.add(m.lemma)
            out.append(m)
    return out


def _kept_subjects(
    source, output, src_words, out_words, lex, *, first_only: bool = False
) -> tuple[list[str], list[Finding]]:
    """The prompt's subjects the output keeps, and a finding for those it lost; ``first_only``:
    only the first (an image caption's main subject)."""
    kept, lost = [], []
    out_lemmas = {m.lemma for m in output}
    out_texts = {w.text for w in out_words}
    parts = {p for w in out_words for p in re.split(r"[-']", w.text) if len(p) >= 4}
    for m in _subject_nouns(source, lex)[: 1 if first_only else None]:
        # "skateboard" keeps "skateboarding" and back, but "bath" does not keep "bathroom"
        if (
            any(matches(m.lemma, o, lex) for o in out_lemmas)
            or any(
                p.startswith(m.lemma) or m.lemma.startswith(p) and len(p) >= len(m.lemma) - 3
                for p in parts
                if len(m.lemma) >= 4
            )
            or _kept_by_its_kind(m, src_words, out_texts, lex)
        ):
            kept.append(m.lemma)
        else:
            lost.append(m.lemma)
    if not lost:
        return kept, []
    shown = ", ".join(f'"{w}"' for w in lost[:4])
    return kept, [
        Finding(
            kind="lost",
            code="lost_subject",
            words=lost,
            detail=f"the output lost {shown} from the prompt",
        )
    ]


def _kept_by_its_kind(m: Mention, src_words, out_texts: set[str], lex: Lexicon) -> bool:
    """A compound's head kept by the word that names its kind: "matcha tea" by "matcha",
    "coconut fruit" by "coconut", "light house" by "lighthouse"; never by a person, animal
    or vehicle ("corgi pizza" is no corgi), a body part ("hair drier") or a word of the picture
    ("light")."""
    if not m.position:
        return False
    kind, head = src_words[m.position - 1], src_words[m.position]
    if kind.phrase != head.phrase:
        return False
    if kind.text + m.lemma in out_texts or kind.text + head.text in out_texts:
        return True
    if (
        len(kind.text) < 4
        or kind.text not in out_texts
        or kind.text in STOPWORDS
        or kind.text in PICTURE_WORDS
    ):
        return False
    noun = lex.noun_lemma(kind.text)
    if noun is None:  # a word the lexicon lacks: "matcha"
        return not lex.knows(kind.text)
    return (
        lex.is_noun(noun)
        and not lex.is_modifier_word(kind.text)
        and not lex.salient_class(noun)
        and lex.lexname(noun) != "noun.body"
    )  # a "hair drier" is not kept by hair


# words that bring something new into an image: "add a man", "a dog walks into the frame"
_ADDING_VERBS = frozenset(
    "add adds adding added insert inserts inserting inserted introduce introduces introducing "
    "include includes including place placing put putting".split()
)
_ENTERING = re.compile(
    r"\b(?:enters?|entering|walks? into|comes? into|appears?|appearing|joins?|joining)\b"
)


_NEW = frozenset(
    "a an another some several more two three four five six seven eight nine ten".split()
)


def _explicitly_added(output: list[Mention], ws) -> list[Mention]:
    """Mentions the text adds to an unseen image: a new one ("a", "another", a number; not "the")
    as the object of an adding verb (within four words, same phrase), or as the subject of
    "enters/appears/joins"."""
    out = []
    for m in output:
        before = [
            w.text
            for w in ws[max(0, m.position - 4) : m.position]
            if w.phrase == ws[m.position].phrase
        ]
        verb = max((i for i, w in enumerate(before) if w in _ADDING_VERBS), default=None)
        new = any(w in _NEW for w in (before[verb + 1 :] if verb is not None else before[-3:]))
        phrase = " ".join(w.text for w in ws[m.position + 1 :] if w.phrase == ws[m.position].phrase)
        if new and (verb is not None or _ENTERING.match(phrase[:40])):
            out.append(m)
    return out


def _added_subjects(
    output: list[Mention], ws, licence: Licence, lex: Lexicon, *, pronouns: bool = True
) -> list[Finding]:
    added: dict[str, str] = {}
    if pronouns and not licence.animate:
        for i, w in enumerate(ws):
            if (
                (w.text in PERSON_PRONOUNS or _AGE.match(w.text))
                and not w.quoted
                and not depicted_at(ws, i, lex)
            ):
                added[w.text] = (
                    "person"  # "she", "someone", "a 12-year-old" ("a photo of someone": no)
                )
                break
    for m in output:
        cls = lex.salient_class(m.lemma) or _COMPOUNDS.get(
            (ws[m.position - 1].text if m.position else "", m.lemma)
        )
        if (
            not cls
            or m.modifier
            or m.depicted
            or m.quoted
            or m.lemma in added
            or m.lemma in PICTURE_WORDS
        ):
            continue  # "the whole tableau": the picture, not a group of people
        if cls == "vehicle" and _standing(ws, m.position):
            continue  # "a row of parked scooters", "rusting ships": scenery
        counted = m.count is not None and 1 < m.count < 10
        if not licence.allows(m.lemma, lex, plural=m.many, counted=counted):
            added[m.lemma] = cls
    if not added:
        return []
    return [
        Finding(
            kind="added_subject",
            code=f"added_{cls}",
            words=[w for w, c in added.items() if c == cls],
            detail=f"the output adds {'an' if cls[0] in 'aeiou' else 'a'} {cls} "
            "the prompt does not have: "
            + ", ".join(f'"{w}"' for w, c in added.items() if c == cls),
        )
        for cls in dict.fromkeys(added.values())
    ]


# a vehicle nobody drives: scenery of the place, not a subject
_STANDING = frozenset(
    """parked moored docked anchored abandoned rusting rusted rusty wrecked sunken derelict
    stationary idle""".split()
)


def _standing(ws, position: int) -> bool:
    return any(
        w.text in _STANDING
        for w in ws[max(0, position - 3) : position]
        if w.phrase == ws[position].phrase
    )
