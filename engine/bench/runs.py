"""What the benchmark measures: its settings, the runs (decoding modes), and one timed decode.

A *run* is one engine configuration (``none``, ``chain@B``, ``tree@B``, ``harness``);
``decode_run`` decodes one prompt with it (peers time themselves: ``Peer.decode``).
Not here: aggregation (``engine.bench.analysis``), the report (``engine.bench.report``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Callable, Sequence

import torch

from ..decode.autoregressive import decode_autoregressive
from ..decode.sampling import SamplingParams
from ..decode.stats import DecodeStats
from ..generator import Generator
from ..speculative.drafter import Drafter, DrafterConfig
from ..speculative.loop import FixedTree, TreeConfig, decode_speculative
from .sample import Sample

SCHEMA_VERSION = 1
MODES = ("none", "chain", "tree", "harness")
CONCURRENCY_NOTE = (
    "at concurrency C > 1 every run decodes C prompts per batched pass and a group's wall time "
    "is split evenly over its prompts (tokens/s = batch throughput); peers decode one prompt "
    "at a time"
)
MAX_CONCURRENCY = 64


class BenchError(ValueError):
    """The benchmark settings cannot be run."""


@dataclass(frozen=True)
class BenchPrompt:
    """One tokenized prompt; ``task`` groups prompts for tau per task (t2v, writing, ...)."""

    ids: tuple[int, ...]
    task: str
    label: str = ""


@dataclass(frozen=True)
class BenchConfig:
    max_new_tokens: int = 128
    temperature: float = 0.0
    repetition_penalty: float = 1.0
    seed: int | None = 0
    budgets: tuple[int, ...] = (8, 16)
    modes: tuple[str, ...] = ("none", "chain", "tree", "harness")
    concurrency: int = 1
    tree_max_depth: int = 6
    tree_top_k: int = 4
    warmup: bool = True

    def __post_init__(self) -> None:
        if not 1 <= self.concurrency <= MAX_CONCURRENCY:
            raise BenchError(
                f"concurrency must be between 1 and {MAX_CONCURRENCY}, not {self.concurrency}"
            )
        unknown = [m for m in self.modes if m not in MODES]
        if unknown:
            raise BenchError(f"unknown mode(s) {', '.join(unknown)}; use {', '.join(MODES)}")
        if not self.budgets or any(b < 1 for b in self.budgets):
            raise BenchError(f"budgets must be integers >= 1, not {list(self.budgets)}")
        if self.max_new_tokens < 1:
            raise BenchError("max_new_tokens must be >= 1")

    def params(self, max_new_tokens: int | None = None) -> SamplingParams:
        return SamplingParams(
            temperature=self.temperature,
            repetition_penalty=self.repetition_penalty,
            max_new_tokens=max_new_tokens or self.max_new_tokens,
            seed=self.seed,
        )


@dataclass(frozen=True)
class RunSpec:
    """One engine configuration measured: ``none``, ``chain@8``, ``tree@16``, ``harness``."""

    name: str
    mode: str
    budget: int | None = None
    tree: TreeConfig | None = None
    planner: object | None = None  # the ``Harness`` of a ``harness`` run


def build_runs(config: BenchConfig) -> list[RunSpec]:
    """The runs to measure; ``none`` always comes first (it is the reference)."""
    runs = [RunSpec("none", "none")]
    for budget in config.budgets:
        if "chain" in config.modes:
            runs.append(RunSpec(f"chain@{budget}", "chain", budget, TreeConfig.chain(budget)))
        if "tree" in config.modes:
            tree = TreeConfig(
                budget, min(config.tree_max_depth, budget), min(config.tree_top_k, budget)
            )
            runs.append(RunSpec(f"tree@{budget}", "tree", budget, tree))
    if "harness" in config.modes:
        runs.append(RunSpec("harness", "harness"))
    return runs


def random_drafter(model, seed: int | None = 0) -> Drafter:
    """An untrained drafter for ``model`` (its tau is meaningless; it exercises the code paths)."""
    with torch.random.fork_rng(devices=[]):  # leave the caller's random state alone
        torch.manual_seed(0 if seed is None else seed)
        drafter = Drafter(DrafterConfig.for_target(model.config), dtype=model.dtype)
    return drafter.to(model.lm_head.weight.device).attach(model).eval()


# ---- decoding ------------------------------------------------------------------------------------
def decode_run(
    generator: Generator,
    drafter: Drafter | None,
    run: RunSpec,
    prompt_ids: Sequence[int],
    params: SamplingParams,
) -> Sample:
    """Decode one prompt with one run, timed end to end (prefill included)."""
    stats, stop, model = DecodeStats(), generator.stop_checker(params), generator.model
    started = time.perf_counter()
    if run.mode == "none":
        tokens = list(decode_autoregressive(model, prompt_ids, params, stop, stats))
    else:
        if drafter is None:
            raise BenchError(f"run {run.name} needs a drafter")
        if run.mode == "harness":
            from ..planning.harness import decode_harness

            chunks = decode_harness(model, drafter, prompt_ids, params, stop, stats, run.planner)
        else:
            chunks = decode_speculative(
                model, drafter, prompt_ids, params, stop, stats, FixedTree(run.tree)
            )
        tokens = [t for chunk in chunks for t in chunk]
    return Sample(tokens, time.perf_counter() - started, stats)


def with_harness(
    run: RunSpec, model, drafter, say: Callable[[str], None], copies: object | None = None
) -> RunSpec:
    """Give a ``harness`` run one Harness (stored cost table, else a quick calibration) for all
    prompts, pricing copy drafts from ``copies`` (a ``CopyDrafter``) where given, as the
    embedded backend's harness does with its drafter's table."""
    if run.mode != "harness" or run.planner is not None:
        return run
    from ..planning.harness import Harness

    say("loading the cost table (a quick calibration when none is stored)")
    harness = Harness.for_model(model, drafter)
    harness.copies = copies
    harness.costs  # now, not inside the first timed decode  # noqa: B018
    return replace(run, planner=harness)


def warm_up(generator, drafter, runs, peers, prompt: BenchPrompt, config: BenchConfig) -> None:
    """One tiny decode per run and peer, so one-time costs do not land on the first prompt."""
    ids, params = prompt.ids[:16], config.params(max_new_tokens=2)
    for run in runs:
        decode_run(generator, drafter, run, ids, params)
    for peer in peers:
        peer.decode(ids, params)


def rotated(items: list, shift: int) -> list:
    shift %= max(len(items), 1)
    return items[shift:] + items[:shift]
