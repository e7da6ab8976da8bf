"""The speculative layer: the drafter and its checkpoints, draft trees, lossless verification,
the planner contract and the single-sequence and batched speculative loops.

Not here: cost-aware planning (``engine.planning``).
"""
