"""Structured enhancement: the user's words verbatim, then short vetted parts in the profile's
order.

``compose(prompt, profile, ...)`` builds the text from the phrase sets in
``templates/phrases`` (``phrases``), what the prompt already says (``cues``),
the subjects it names (``subjects``), a choice per part (``choose``) and the
profile's layout (``layout``). Not here: free prose from a model (``promptx.enhancer``).
"""

from .compose import Composition, compose
from .phrases import PhraseBook, phrase_book

__all__ = ["Composition", "PhraseBook", "compose", "phrase_book"]
