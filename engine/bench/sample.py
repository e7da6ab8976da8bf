"""One timed decode of one prompt by a run or a peer (``Sample``); picklable, so that a peer
in its own process can send it back. Not here: how it is measured (``engine.bench.runs``,
``engine.bench.peers``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..decode.stats import DecodeStats


@dataclass
class Sample:
    """One decode of one prompt by one run or peer."""

    tokens: list[int]
    latency_s: float
    stats: DecodeStats | None = None
    first_token_s: float | None = None  # a streaming peer's time to its first token (prefill)
