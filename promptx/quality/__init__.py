"""Faithfulness of enhanced prompts: ``assess(prompt, text, profile) -> Assessment``.

Pure Python (no torch), fast enough to run on every output. Lexical knowledge
comes from a WordNet extract shipped in ``data/`` (see ``data/README.md``).
Not here: cleaning text (``promptx.text.cleanup``) or retrying (``promptx.enhancer``).
"""

from .assess import assess
from .assessment import KINDS, Assessment, Finding

__all__ = ["KINDS", "Assessment", "Finding", "assess"]
