"""The planner contract: who decides the draft tree of every speculative round.

Both speculative decoders (``engine.speculative.loop`` for one sequence,
``engine.speculative.batch`` for a batch) take a ``Planner`` and nothing
else. ``engine.speculative.loop.FixedTree`` plans one ``TreeConfig`` shape every
round; ``engine.planning.harness.Harness`` sizes each round from measured costs.

Not here: drafting itself (``engine.speculative.loop.DraftPass``), the harness's
policy (``engine.planning.policy``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from ..decode.stats import DecodeStats
    from .copy_draft import CopyDrafter, CopySession
    from .drafter import Drafter
    from .tree import DraftTree


@dataclass(frozen=True)
class TreeConfig:
    """Shape of the draft tree: verification budget N, max depth, top-k (k = 1 is a chain)."""

    budget: int = 16
    max_depth: int = 6
    top_k: int = 4

    def __post_init__(self) -> None:
        if self.budget < 0 or self.max_depth < 1 or self.top_k < 1:
            raise ValueError("tree config needs budget >= 0, max_depth >= 1, top_k >= 1")

    @classmethod
    def chain(cls, length: int) -> "TreeConfig":
        """A chain of ``length`` draft tokens; length 0 is a plain decoding step (nothing
        drafted)."""
        return cls(budget=length, max_depth=max(length, 1), top_k=1)


class Planner(ABC):
    """Decides each round's draft tree and may learn from the round's outcome.

    ``max_nodes``: most tree nodes one round verifies; ``draft_slots``: most drafter cache
    slots one tree may use; ``adaptive``: the choices depend on measured timings, so a seeded
    sampled decode would not repeat itself (callers then use a fixed tree); ``copies``: copy
    drafts (``engine.speculative.copy_draft``) the planner prices with ``copy_chain``, or None.
    """

    max_nodes: int
    draft_slots: int
    adaptive: bool = False
    copies: "CopyDrafter | None" = None

    @abstractmethod
    def draft(self, drafter: "Drafter", state, context: int) -> "DraftTree":
        """The tree below the root of one sequence (``state``: its ``DraftState``)."""

    @abstractmethod
    def batch_config(self, context: int, batch: int) -> TreeConfig:
        """The tree shape every row of the next batched round drafts."""

    @abstractmethod
    def batch_limit(self) -> TreeConfig:
        """The largest shape ``batch_config`` ever returns (a batch sizes its caches by it)."""

    def observe(
        self, tree: "DraftTree", result, draft_s: float, verify_s: float, stats: "DecodeStats"
    ) -> None:
        """Outcome of one single-sequence round (default: nothing to learn)."""

    def observe_batch(
        self,
        config: TreeConfig,
        trees: Sequence["DraftTree"],
        results: Sequence,
        draft_s: float,
        verify_s: float,
        stats: Sequence["DecodeStats"],
    ) -> None:
        """Outcome of one batched round (default: nothing to learn)."""

    def for_sampling(self) -> "Planner | None":
        """The planner a seeded sampled decode uses instead (one that is not ``adaptive``, so the
        same seed gives the same text), or None to decode plainly. Default: itself."""
        return self

    def plain_steps(self, context: int) -> int:
        """Plain decoding steps to take before the next draft (default 0: draft every round)."""
        return 0

    def observe_pace(self, tokens: int, seconds: float, plain: bool) -> None:
        """Wall time of a speculative round or a run of plain steps, everything included."""

    def copy_chain(self, session: "CopySession", context: int) -> list[int]:
        """The copy draft to verify after the committed tokens (empty: none). Default: none."""
        return []

    def copy_instead(self, session: "CopySession", context: int) -> list[int]:
        """The copy draft the next round should verify instead of drafting (a model that verifies
        one chain per round); empty: draft. Default: empty."""
        return []

    def observe_copy(self, proposed: int, accepted: int) -> None:
        """How many tokens of the last ``copy_chain`` the target accepted (default: nothing to
        learn)."""
