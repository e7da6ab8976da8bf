"""Cost-aware sizing of one draft tree (EAGLE-4 harness policy), on plain numbers.

A round's expected output is 1 + the sum, over the verified nodes, of each
node's *value* (the calibrated probability that its whole path is accepted);
its cost is the drafting time spent plus the target's verification latency
for that many tokens. The policy maximises expected tokens per second:

- ``best_verify_count``: how many of the best nodes to verify (0 = a plain
  decoding step).
- ``choose_width``: how many nodes of the newest level to expand next. An
  expanded node of value u is expected to add a child of value u * a (a: the
  calibrated acceptance of a best child); the width is taken that gives the
  best predicted rate, and none when no width beats the current plan, so
  growth stops by itself: deep where the drafter is sure, wide where
  verification is cheap, a chain or nothing where it is expensive.

Values along a path never increase (products of probabilities <= 1), so the
best n nodes always form a connected tree. Not here: running models
(``engine.planning.harness``), measuring costs (``engine.planning.calibrate``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

WIDTH_STEPS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)


@dataclass(frozen=True)
class Plan:
    """The best verification set for a pool: ``count`` nodes, predicted ``rate`` (tokens/s)."""

    count: int
    expected_tokens: float  # 1 + sum of the verified values
    seconds: float  # drafting spent + verification
    rate: float


def best_verify_count(
    values: Sequence[float], spent: float, verify: Callable[[int], float], max_nodes: int
) -> Plan:
    """Over n = 0..max_nodes: maximise (1 + sum of the n best values) / (spent + verify(n + 1))."""
    ordered = sorted(values, reverse=True)[:max_nodes]
    best = Plan(0, 1.0, spent + verify(1), 1.0 / (spent + verify(1)))
    total = 1.0
    for n, value in enumerate(ordered, start=1):
        total += value
        seconds = spent + verify(n + 1)
        rate = total / seconds
        if rate > best.rate:
            best = Plan(n, total, seconds, rate)
    return best


def choose_width(
    pool_values: Sequence[float],
    candidates: Sequence[float],
    child_accept: float,
    spent: float,
    verify: Callable[[int], float],
    draft: Callable[[int], float],
    max_nodes: int,
    min_value: float = 1e-3,
) -> tuple[int, Plan]:
    """How many of ``candidates`` (values of the newest level, best first) to expand next.

    Returns (width, plan predicted after expanding that many); width 0 with the current plan
    when no expansion is predicted to raise the rate.
    """
    current = best_verify_count(pool_values, spent, verify, max_nodes)
    ordered = [u for u in sorted(candidates, reverse=True) if u * child_accept >= min_value]
    best_width, best_plan = 0, current
    cap = min(len(ordered), max_nodes, WIDTH_STEPS[-1])
    widths = sorted({w for w in WIDTH_STEPS if w < cap} | ({cap} if cap else set()))
    for width in widths:
        children = [u * child_accept for u in ordered[:width]]
        plan = best_verify_count(
            list(pool_values) + children, spent + draft(width), verify, max_nodes
        )
        if plan.rate > best_plan.rate:
            best_width, best_plan = width, plan
    return best_width, best_plan


def best_copy_length(values: Sequence[float], scale: float, verify: Callable[[int], float]) -> int:
    """How many tokens of a copy chain to verify (0 = a plain step): over n = 0..len(values),
    maximise (1 + ``scale`` * the sum of the first n values) / verify(n + 1). A copy chain costs no
    drafting, only the longer verification pass; ``scale`` corrects the values by what was
    observed."""
    best_n, best_rate, total = 0, 1.0 / verify(1), 1.0
    for n, value in enumerate(values, start=1):
        total += scale * value
        rate = total / verify(n + 1)
        if rate > best_rate:
            best_n, best_rate = n, rate
    return best_n
