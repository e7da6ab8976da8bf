"""The commit step every decoder shares: accepted tokens -> stop rules, counts, output.

``commit_tokens`` feeds a round's accepted tokens (one for a plain step, a
verified path for a speculative round) through the ``StopChecker`` up to the
token where generation ends, counts the ones that are output (EOS is not) in
``DecodeStats`` and records the finish reason. Not here: choosing tokens
(``engine.decode.sampling``, ``engine.speculative.verify``), the stop rules
(``engine.decode.stopping``).
"""

from __future__ import annotations

from typing import Sequence

from .stats import DecodeStats
from .stopping import StopChecker


def commit_tokens(tokens: Sequence[int], stop: StopChecker, stats: DecodeStats) -> list[int]:
    """The tokens to output from ``tokens`` (those before the stop, EOS dropped); ``stop.done`` says
    whether generation ended inside them."""
    used = stop.accept_many(tokens)
    emitted = [t for t in tokens[:used] if t not in stop.eos_ids]
    stats.new_tokens += len(emitted)
    if stop.done:
        stats.finish_reason = stop.finish_reason
    return emitted
