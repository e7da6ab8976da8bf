"""A light or medium enhancement of one request: ``compose`` run, assessed and returned.

Light draws vetted phrases without the model (nothing is decoded; the model is
not even loaded); medium lets the model rank the drawn phrases by how likely it
finds each after the prompt. The text is assessed like free prose; a part the
assessment objects to is left out and the rest composed again. Not here: the
phrase sets and their choice (``promptx.compose``), free prose (``promptx.enhancer``).
"""

from __future__ import annotations

import re
import time
from typing import Callable

from .compose import compose
from .compose import layout
from .compose.layout import DROP_ORDER
from .languages import describe_language
from .quality import Assessment, assess
from .request import EnhanceRequest
from .result import EnhancedPrompt, EnhanceStats

# compositions tried before the last one stands (each without what the assessment objected to)
MAX_MENDS = 6
ENGLISH_ONLY = (
    "the phrase sets of a {strength} enhancement are English and this prompt is {language}; "
    "use strength='full' with a model that reads it"
)


def structured_result(
    request: EnhanceRequest,
    *,
    scorer: Callable | None,
    counter=None,
    backend: str = "",
    model: str = "",
) -> EnhancedPrompt:
    """The light (no ``scorer``) or medium enhancement of ``request``."""
    started = time.perf_counter()
    if _foreign(request):
        language = describe_language(request.source_language)
        return request.unchanged(
            ENGLISH_ONLY.format(strength=request.strength, language=language), fallback=False
        )
    fits = _fits(request, counter)
    without: frozenset[str] = frozenset()
    avoid: frozenset[str] = frozenset()
    own = _own_faults(request)
    for _ in range(MAX_MENDS):
        made = compose(
            request.prompt,
            request.profile,
            seed=request.seed or 0,
            scorer=scorer,
            fits=fits,
            without=without,
            avoid=avoid,
            style=request.style,
        )
        assessment = _assessed(request, made.text)
        faults = [f for f in assessment.findings if _key(f) not in own]
        if not faults or not made.added:
            break
        # another phrase without the words objected to; a part when the finding names none
        named = {w.lower() for f in faults for w in f.words}
        if named - avoid:
            avoid = avoid | named
        else:
            without = without | {
                _blamed(faults, made.added) or next(p for p in DROP_ORDER if p in made.added)
            }
    stats = EnhanceStats(
        latency_s=round(time.perf_counter() - started, 4),
        attempts=1,
        backend=backend,
        model=model if scorer is not None else "",
    )
    if counter is not None:
        stats.encoder_tokens, stats.encoder_counter = counter.count(made.text), counter.name
    if [f for f in assessment.findings if _key(f) not in own]:
        reason = "; ".join(assessment.reasons())
        return request.unchanged(
            f"the structured text did not pass: {reason}",
            fallback=True,
            stats=stats,
            assessment=assessment,
        )
    return request.result(made.text, stats, assessment, added=made.added)


def _foreign(request: EnhanceRequest) -> bool:
    """A prompt in another language than English (one without letters is not)."""
    return request.source_language != "en" and any(c.isalpha() for c in request.prompt)


def _fits(request: EnhanceRequest, counter) -> Callable[[str], bool] | None:
    limit = request.profile.length.max_encoder_tokens
    if counter is None or limit is None:
        return None
    return lambda text: counter.count(text) <= limit


def _assessed(request: EnhanceRequest, text: str) -> Assessment:
    """The assessment of a structured text; its length is the layout's, so a short one is no
    fault."""
    length = request.profile.length.model_copy(update={"min_words": 1})
    profile = request.profile.model_copy(update={"length": length})
    return assess(
        request.prompt,
        text,
        profile,
        context=request.caption,
        language="english" if request.wants_english else "keep",
    )


def _own_faults(request: EnhanceRequest) -> set[tuple]:
    """What the assessment finds in the user's words alone (an odd prompt such as "One blue balls
    ... collide, bird's-eye view"): not faults of the added parts."""
    tags = request.profile.format == "tags"
    bare = layout.tags(request.prompt, []) if tags else layout.prompt_sentence(request.prompt)
    return {_key(f) for f in _assessed(request, bare).findings} if bare else set()


def _key(finding) -> tuple:
    return finding.code, tuple(sorted(w.lower() for w in finding.words))


def _blamed(findings, added: dict[str, str]) -> str | None:
    """The added part whose words a finding is about, if one is."""
    for finding in findings:
        named = {w.lower() for w in finding.words}
        for part, text in added.items():
            said = set(re.findall(r"[a-z][a-z'-]*", text.lower()))
            if named & (said | {w.rstrip("s") for w in said}):
                return part
    return None
