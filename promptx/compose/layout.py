"""How chosen phrases are written out: sentences for prose and edits, tags for SDXL.

The user's words come as they are (a capital first letter and a closing
period added for prose); an appearance or setting phrase follows "The knight
has" / "The knights have", a camera phrase "The camera", kept aspects "Keep";
other phrases stand as their own sentence. Not here: which phrases (``choose``).
"""

from __future__ import annotations

from .choose import Choice
from .subjects import Mention

# the words a standalone phrase is scored after (the model's likelihood of the phrase as this part)
SCORE_LABELS = {
    "light": "Lighting:",
    "style": "Style:",
    "motion": "Motion:",
    "action": "Motion:",
    "shot": "Shot:",
    "composition": "Composition:",
    "background": "Background:",
    "ambient": "Around it:",
    "quality_tags": "Tags:",
    "camera": "The camera",
    "keep": "Keep",
}
# parts dropped first when the text is over the target's budget
DROP_ORDER = (
    "composition",
    "quality_tags",
    "background",
    "ambient",
    "motion",
    "style",
    "keep",
    "shot",
    "camera",
    "light",
    "action",
    "setting",
    "appearance",
)


def frame(part: str, mention: Mention | None = None) -> str:
    """The words a phrase of ``part`` follows (when scored, and for appearance when said)."""
    if mention is not None:
        return f"The {mention.surface} {'have' if mention.plural else 'has'}"
    return SCORE_LABELS.get(part, "")


def sentence(choice: Choice) -> str:
    """A chosen phrase as the sentence a prose prompt says."""
    if choice.mention is not None or choice.part == "camera":
        return f"{frame(choice.part, choice.mention)} {choice.phrase}."
    return _capital(choice.phrase) + "."


def keep_sentence(phrases: list[str]) -> str:
    """ "Keep A, B and C." for an edit."""
    listed = phrases[0] if len(phrases) == 1 else ", ".join(phrases[:-1]) + " and " + phrases[-1]
    return f"Keep {listed}."


def prompt_sentence(prompt: str) -> str:
    """The user's words, capitalised and closed with a period where they end without one."""
    text = prompt.strip()
    if not text:
        return ""
    text = _capital(text)
    return text if text[-1] in ".!?\"')" else text + "."


def tags(prompt: str, phrases: list[str]) -> str:
    """SDXL's comma-separated tags: the user's words first."""
    head = prompt.strip().rstrip(".,;: ")
    return ", ".join([head] + phrases) if head else ", ".join(phrases)


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
