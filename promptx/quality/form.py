"""Form findings: is the text a prompt at all, in the form its profile wants?

Second person or a reader addressed, a narrator speaking in the first person,
dialogue or quotes the input did not have, past-tense storytelling, an explanation
of the subject instead of a picture of it, a preamble, the wrong language, word salad (an
English text whose words are mostly not English words), a length far
outside the profile's budget, plus the generic failures (empty, degenerate,
chatter, questions to the user) that ``validate`` detects.
Not here: what the text says about the prompt's subjects (``assess``).
"""

from __future__ import annotations

import re

from promptx.languages import identify_language, is_english_word
from promptx.text.language import count_words, detect_language
from promptx.text.validate import degenerate_problem, quoted_spans, talking_to_user

from .assessment import Finding
from .lexicon import Lexicon

__all__ = ["FIRST_PERSON", "SECOND_PERSON", "form_findings", "LENGTH_SLACK"]

# the length finding fires below min_words * low or above max_words * high
LENGTH_SLACK = (0.5, 1.5)
SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself|yourselves|you're|you'll|you've)\b", re.I)
# "I count the hours", "a sight I've never seen", "we watch": a narrator, not a prompt
# ("US" in capitals is a country; lower-case "us" is the narrator; "our solar system",
# "our planet" are idioms of description, so "our" is not counted)
FIRST_PERSON = re.compile(
    r"(?<![\w-])(?:I|I'm|I've|I'd|I'll|[Mm]e|[Mm]y|[Mm]yself|[Ww]e|[Ww]e're|[Ww]e've|us)"
    r"(?![\w-])"
)
_PREAMBLE = re.compile(
    r"^\s*(?:sure|certainly|of course|okay|ok|here is|here's|here are|prompt:|"
    r"enhanced prompt|as requested)\b(?!-)",
    re.I,
)
# an encyclopedia's voice: "the golden ratio is a mathematical concept named after ..."
_EXPLAINS = re.compile(
    r"\b(?:(?:is|are) (?:a|an|the) (?:[a-z]+ ){0,2}(?:concept|term|idea|theory|principle|notion|"
    r"word|field of study)\b|refers? to\b|is defined as|is known as|named after|is described by|"
    r"in mathematics|in physics|the formula)",
    re.I,
)
_PRONOUN = frozenset("he she they it i we".split())
_PAST_BE = frozenset("was were had did".split())
_PRESENT_BE = frozenset("is are has does".split())
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


def form_findings(
    prompt: str,
    text: str,
    *,
    fmt: str,
    language: str,
    min_words: int | None,
    max_words: int | None,
    lex: Lexicon,
) -> list[Finding]:
    """Form problems of ``text`` (already cleaned) as an enhancement of ``prompt``."""
    if not text.strip():
        return [Finding(kind="form", code="empty", detail="the output is empty")]
    found: list[Finding] = []
    degenerate = degenerate_problem(text)
    if degenerate:
        found.append(Finding(kind="form", code="degenerate", detail=degenerate))
    for problem in talking_to_user(text):
        found.append(Finding(kind="form", code="talks_to_user", detail=problem))
    unquoted = _without_quotes(text)
    if SECOND_PERSON.search(unquoted) and not SECOND_PERSON.search(prompt):
        word = SECOND_PERSON.search(unquoted).group(0)
        found.append(
            Finding(
                kind="form",
                code="second_person",
                words=[word],
                detail=f'the output addresses a reader ("{word}")',
            )
        )
    narrator = FIRST_PERSON.search(unquoted)
    if narrator and not re.search(FIRST_PERSON.pattern, prompt, re.I):
        found.append(
            Finding(
                kind="form",
                code="first_person",
                words=[narrator.group(0)],
                detail=f'the output speaks in the first person ("{narrator.group(0)}")',
            )
        )
    new_quotes = [q for q in quoted_spans(text) if q not in prompt and _is_speech(q, text)]
    if new_quotes:
        found.append(
            Finding(
                kind="form",
                code="dialogue",
                words=new_quotes[:3],
                detail=f'the output quotes text the prompt did not have ("{new_quotes[0]}")',
            )
        )
    if _PREAMBLE.match(text):
        found.append(
            Finding(kind="form", code="preamble", detail="the output starts with a preamble")
        )
    if fmt != "tags" and _tells_past_story(unquoted, prompt, lex):
        found.append(
            Finding(
                kind="form", code="past_tense", detail="the output tells a story in the past tense"
            )
        )
    explains = _EXPLAINS.search(unquoted)
    if explains and explains.group(0).lower() not in prompt.lower():
        found.append(
            Finding(
                kind="form",
                code="explains",
                words=[explains.group(0)],
                detail="the output explains instead of describing a picture "
                f'("{explains.group(0)}")',
            )
        )
    found += _language_findings(prompt, text, language)
    found += _salad_findings(
        prompt, unquoted, language, lex, SALAD_SHARE_TAGS if fmt == "tags" else SALAD_SHARE
    )
    found += _length_findings(text, min_words, max_words)
    return found


# an English text with more than this share of its new lower-case words unknown (to the
# lexicon and promptx's English word list) is word salad. Measured on 6 prompts x 4 temperatures:
# the model's texts at its profiles' temperatures 0-1%, at 1.0 0%, at 1.5 2-8%, at 2.0 13-39%
# ("figurerounding", "taark", "encumbent")
SALAD_SHARE = 0.1
# tags are short and full of trade words the lexicon lacks ("uhd, kodak portra": 3 of 22)
SALAD_SHARE_TAGS = 0.25
SALAD_MIN_WORDS = 8


def _salad_findings(
    prompt: str, text: str, language: str, lex: Lexicon, share: float
) -> list[Finding]:
    """English output whose words are not English words (sampling too hot, a broken model)."""
    english_out = language in ("english", "en") or (
        language == "keep" and identify_language(prompt) == "en"
    )
    if not english_out or detect_language(text) != "en":
        return []
    own = set(_WORD.findall(prompt.lower()))
    words = [
        w
        for w in re.findall(r"(?<![\w'-])[a-z]+(?:'[a-z]+)?(?![\w'-])", text)
        if len(w) > 1 and w not in own
    ]
    unknown = [w for w in words if not (lex.knows(w) or is_english_word(w))]
    if len(words) < SALAD_MIN_WORDS or len(unknown) <= share * len(words):
        return []
    return [
        Finding(
            kind="form",
            code="word_salad",
            words=unknown[:5],
            detail=f"{len(unknown)} of {len(words)} words are not English words "
            f"({', '.join(unknown[:5])})",
        )
    ]


_SPEECH_VERBS = re.compile(
    r"\b(?:say|says|said|saying|ask|asks|asked|shout|shouts|shouted|yell|yells|"
    r"yelled|whisper|whispers|whispered|reply|replies|replied|exclaim|exclaims|"
    r"exclaimed|call|calls|called|cry|cries|cried|tell|tells|told)\b",
    re.I,
)


def _is_speech(quote: str, text: str) -> bool:
    """Quoted speech, not a title or sign: it ends a sentence inside the quotes, or a speech
    verb stands right beside it; a title ("The Amazing Spider-Man.") never is."""
    if _title_case(quote):
        return False
    if re.search(r"[!?.,]$", quote.strip()):
        return True
    at = text.find(quote)
    around = text[max(0, at - 40) : at] + " " + text[at + len(quote) : at + len(quote) + 30]
    return bool(_SPEECH_VERBS.search(around))


_MINOR_WORDS = frozenset("a an the of and or in on at to for with by from".split())


def _title_case(quote: str) -> bool:
    """Every word capitalised but the small ones: a title or a sign, not a sentence."""
    ws = re.findall(r"[^\W\d_][\w'’-]*", quote)
    return len(ws) >= 2 and all(w[0].isupper() or w in _MINOR_WORDS for w in ws)


def _without_quotes(text: str) -> str:
    out = text.replace("’", "'")
    for q in quoted_spans(out):
        out = out.replace(q, "")
    return out


def _tells_past_story(text: str, prompt: str, lex: Lexicon) -> bool:
    """Past-tense narration beyond the prompt's own: the output's past forms, less as many as
    the prompt has ("the lampposts were adorned" licenses its "were"), are two or more and
    outnumber its present forms."""
    past, present = _tense_counts(text, lex)
    past -= _tense_counts(prompt, lex)[0]
    return past >= 2 and past > present


def _tense_counts(text: str, lex: Lexicon) -> tuple[int, int]:
    """(past, present) verb forms: "she walked", "she slowly turned ... and smiled", "it was";
    "is", "she walks". A verb counts right after a pronoun (an adverb in -ly between), and
    after "and"/"then" once a past verb has been seen in the sentence; punctuation ends a
    clause ("behind it, stylized waves" is no verb of "it")."""
    past = present = 0
    subject = seen = False  # the last word opened a clause; a past verb in this sentence
    for word in _WORD_OR_MARK.findall(text.lower()):
        if word in _PAST_BE:
            past += 1
            seen = True
        elif word in _PRESENT_BE:
            present += 1
        elif subject and _is_past_form(word, lex):
            past += 1
            seen = True
        elif subject and word.endswith("s") and lex.verb_lemma(word):
            present += 1
        elif subject and word.endswith("ly"):
            continue  # "she slowly turned"
        seen = seen and word not in ".!?"
        subject = word in _PRONOUN or (word in ("and", "then") and seen)
    return past, present


_WORD_OR_MARK = re.compile(r"[a-z]+(?:'[a-z]+)?|[.,;:!?]")


def _is_past_form(word: str, lex: Lexicon) -> bool:
    lemma = lex.verb_lemma(word)
    if lemma is None or lemma == word:
        return False
    return word.endswith("ed") or not word.endswith(("s", "ing"))


def _language_findings(prompt: str, text: str, language: str) -> list[Finding]:
    got = detect_language(text)
    if language == "english" and got not in ("en", "other"):
        return [
            Finding(kind="form", code="language", detail=f"the output is not in English ({got})")
        ]
    if language == "keep" and got not in ("en", "other", detect_language(prompt)):
        return [
            Finding(
                kind="form",
                code="language",
                detail=f"the output is in neither English nor the prompt's language ({got})",
            )
        ]
    return []


def _length_findings(text: str, min_words: int | None, max_words: int | None) -> list[Finding]:
    n = count_words(text)
    low, high = LENGTH_SLACK
    if min_words and n < min_words * low:
        return [
            Finding(
                kind="form",
                code="length",
                detail=f"the output is too short ({n} words; "
                f"the profile wants {min_words}-{max_words})",
            )
        ]
    if max_words and n > max_words * high:
        return [
            Finding(
                kind="form",
                code="length",
                detail=f"the output is too long ({n} words; "
                f"the profile wants {min_words}-{max_words})",
            )
        ]
    return []
