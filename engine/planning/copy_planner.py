"""A planner that never runs the drafter: plain decoding steps, and copy drafts where they pay.

Used for seeded sampling where the drafter's fixed tree is predicted not to
pay (``Harness.for_sampling``): copy drafts (``engine.speculative.copy_draft``)
cost no drafter step, and this planner prices them from the device's cost
table and a fixed acceptance correction only, never from timings measured
during the decode, so the same seed gives the same text on this device.

Not here: the copy lookups (``engine.speculative.copy_draft``), the pricing maths
(``engine.planning.policy.best_copy_length``).
"""

from __future__ import annotations

from ..speculative.copy_draft import CopyDrafter, CopySession
from ..speculative.planner import Planner, TreeConfig
from ..speculative.tree import DraftTree
from .cost_table import CostTable
from .policy import best_copy_length

EVERY_STEP = 1 << 30  # plain steps asked for at once: the whole decode


class CopyPlanner(Planner):
    """Plain steps with copy rounds priced by the cost table (batch 1)."""

    adaptive = False

    def __init__(self, costs: CostTable, copies: CopyDrafter, scale: float) -> None:
        self.costs, self.copies, self.scale = costs, copies, scale
        self.max_nodes = copies.max_length
        self.max_depth = copies.max_length
        self.draft_slots = 0

    def plain_steps(self, context: int) -> int:
        return EVERY_STEP

    def draft(self, drafter, state, context: int) -> DraftTree:
        return DraftTree.empty()

    def batch_config(self, context: int, batch: int) -> TreeConfig:
        return TreeConfig.chain(0)

    def batch_limit(self) -> TreeConfig:
        return TreeConfig.chain(0)

    def copy_chain(self, session: CopySession, context: int) -> list[int]:
        chain, values = session.propose()
        if not chain:
            return []
        count = best_copy_length(
            values, self.scale, lambda n: self.costs.verify_seconds(n, context, 1)
        )
        return chain[:count]
