"""Where a target's verification passes put their rows: ``TreeLayout``, one value per model.

A target whose attention must sum every key in the vector lane it has in plain
decoding (half precision on a CPU, ``engine.runtime.exact_rows``) gets draft-tree
node (depth d, column c) at cache slot prefix + ``lane_stride`` * c + d, and may
verify only ``max_columns`` columns of a tree (1: chains only, where this CPU's
attention sums a key moved into another column differently). Every other target
keeps the default: contiguous rows, every column. The decoders read it
(``engine.speculative.loop.fit_lanes``, ``tree_room``, ``verify_inputs``); the model
keeps its cache storage to aligned spans where lanes are used.

Not here: the slot arithmetic (``engine.speculative.loop``), deciding the layout
(``engine.runtime.exact_rows``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TreeLayout:
    lane_stride: int = 0  # 0: contiguous rows after the prefix
    max_columns: int | None = None  # draft-tree columns a pass may verify; None: all

    @property
    def lanes(self) -> bool:
        """Rows sit in lane-aligned columns (the cache reads keys in aligned spans)."""
        return self.lane_stride > 0

    @property
    def chains_only(self) -> bool:
        """A pass verifies one column: the planner drafts chains, copy drafts go alone."""
        return self.max_columns == 1
