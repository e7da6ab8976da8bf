"""The word-budget stop: end generation once the text holds more words than clean-up keeps.

Words are counted as clean-up counts them (``language.count_words`` after
``cleanup.strip_wrapping``: a preamble or markdown does not use the budget).
Decoding the whole output after every token would cost O(n^2); instead each
token has a precomputed upper bound on the words it can add (its own words,
plus one per undecodable byte piece that may complete a character), and the
text is decoded only when those bounds say the budget may be exceeded since the
last exact count. Stops exactly where the whole-output check would.

Not here: the stop rules themselves (``engine.decode.stopping``), clean-up.
"""

from __future__ import annotations

from typing import Callable, Sequence

from ..text.cleanup import strip_wrapping
from ..text.language import count_words


def word_bounds(token_texts: Sequence[str]) -> list[int]:
    """Per token id: the most words appending that token can add to any text."""
    return [count_words(text) + text.count("\ufffd") for text in token_texts]


class WordBudgetStop:
    """``stop_if`` predicate for ``engine.decode.stopping.StopChecker``: True once the cleaned text
    holds more than ``limit`` words. One instance per decode (it remembers its progress)."""

    def __init__(
        self, limit: int, bounds: Sequence[int], decode: Callable[[list[int]], str]
    ) -> None:
        self.limit, self.bounds, self.decode = limit, bounds, decode
        self._seen = 0  # tokens already covered by ``_words``
        self._words = 0  # an upper bound on the raw text's words after ``_seen`` tokens
        self.exact_counts = 0  # how often the text was decoded (for tests and curiosity)

    def __call__(self, tokens: list[int]) -> bool:
        for token in tokens[self._seen :]:
            self._words += self.bounds[token] if 0 <= token < len(self.bounds) else self.limit + 1
        self._seen = len(tokens)
        if self._words <= self.limit:
            return False
        self.exact_counts += 1
        text = self.decode(tokens)
        self._words = count_words(text)  # exact again: later tokens add to this
        return self._words > self.limit and count_words(strip_wrapping(text)) > self.limit
