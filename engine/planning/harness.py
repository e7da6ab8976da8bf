"""EAGLE-4 harness: a tree planner that sizes every round's draft tree from measured costs.

Each round the tree grows level by level below the root. Every drafted node
gets a *value*: the product of calibrated draft confidences along its path
(``engine.planning.acceptance``), i.e. the predicted probability that the target
accepts the whole path. ``engine.planning.policy`` then decides, from the
device's ``CostTable`` at the current context length, how many nodes of the
newest level to expand (none = stop growing) and, at the end, how many of the
best nodes to verify (none = a plain decoding step). After verification the
harness feeds the observed acceptances back to the calibrator and corrects
its latency predictions by the observed/predicted ratio, then records its
choices in ``DecodeStats.rounds``. At batch 1 it also times whole rounds
(everything the table does not model included) against plain steps and
decodes plainly, re-measuring a few rounds (``measure_rounds``) after each run of
plain steps (runs carry over from one decode to the next), while speculation is
measured slower per token (running mean seconds per round over running mean
tokens per round: one round that drafts in vain says little); every re-measure
that loses doubles the run (up to ``max_plain_run``), so a drafter that never
pays costs next to nothing.

``decode_harness`` is ``decode_speculative`` driven by a ``Harness``; the
decode loop, verification and losslessness are the speculative decoder's.
Not here: measuring costs (``engine.planning.calibrate``), the policy maths.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterator, Sequence

import torch

from ..decode.sampling import SamplingParams
from ..decode.stats import DecodeStats
from ..decode.stopping import StopChecker
from ..runtime.model import Transformer
from ..speculative.drafter import Drafter
from ..speculative.copy_draft import CopySession
from ..speculative.loop import DraftPass, DraftState, FixedTree, decode_speculative
from ..speculative.planner import Planner, TreeConfig
from ..speculative.tree import DraftTree, TreeExpansion, select_top_nodes
from .acceptance import AcceptanceCalibrator
from .copy_planner import CopyPlanner
from .cost_table import CostTable, CostTableError, table_path
from .policy import best_copy_length, best_verify_count, choose_width


SAMPLING_CONTEXT = 256  # context length at which ``Harness.for_sampling`` compares costs


@dataclass(frozen=True)
class HarnessConfig:
    max_nodes: int = 63  # tree nodes verified at most (64 tokens with the root)
    max_depth: int = 16
    branching: int = 8  # children drafted per expanded node
    min_value: float = 1e-3  # nodes predicted less likely than this are not worth a slot
    child_accept: float = 0.5  # prior for the calibrated acceptance of a best child
    smoothing: float = 0.1  # weight of a new observation in the running child-acceptance estimate
    latency_smoothing: float = (
        0.1  # same for the observed/predicted latency ratios (0: trust the table)
    )
    max_batch_chain: int = 8  # longest chain a batched round drafts
    explore_every: int = (
        16  # batched rounds: a 1-token chain this often even when predicted not to pay
    )
    plain_run: int = 24  # batch 1: plain steps in the first run once speculating is measured slower
    max_plain_run: int = 384  # ... doubled after every re-measured round that loses, up to this
    pace_smoothing: float = 0.3  # weight of a new plain run in the plain seconds-per-token estimate
    # weight of a new round in speculation's running means (a plain mean over the first rounds): a
    # round emits 1 or 2 tokens by luck, and over ~3 rounds a streak of misses looked slower than
    # plain steps often enough to send a drafter that pays 15% to plain runs half the time
    round_smoothing: float = 0.05
    pace_margin: float = 0.03  # speculate unless its seconds per token are this much worse
    measure_rounds: int = 4  # speculative rounds measured together (at first, after each plain run)
    copy_scale: float = (
        0.6  # prior observed/predicted acceptance of copy drafts (the fixed one for sampling)
    )
    # seeded sampling with copy drafts where the drafter's tree does not pay: off, since at the
    # profiles' temperature (0.7) they were no faster than plain decoding on a 2-vCPU Xeon
    # (1.02-1.03x, tau 1.24-1.35: a verification pass costs more than a plain step there); worth it
    # where passes are cheap
    copy_sampling: bool = False


class Harness(Planner):
    """Cost-aware planner for ``decode_speculative`` (batch 1 by default) and batched rounds."""

    adaptive = True  # its trees follow measured timings

    def __init__(
        self,
        costs: CostTable | Callable[[], CostTable],
        config: HarnessConfig | None = None,
        calibrator: AcceptanceCalibrator | None = None,
        batch: int = 1,
    ) -> None:
        """``costs``: the cost table, or a function giving it on first use (loading or measuring it
        then, so that building a harness that is never used costs nothing)."""
        self._costs, self.config, self.batch = costs, config or HarnessConfig(), batch
        self.calibrator = calibrator or AcceptanceCalibrator()
        self.child_accept = self.config.child_accept
        self.chain_accept = self.config.child_accept  # batched rounds: acceptance per chain step
        self._batch_rounds = 0
        self._explore_every = self.config.explore_every
        self._round_s: dict[
            tuple[int, int], float
        ] = {}  # (batch, chain length) -> measured seconds per round
        self._round_scale = {
            "plain": 1.0,
            "chain": 1.0,
        }  # measured / table seconds, batched rounds of any size
        self.verify_scale = self.draft_scale = 1.0  # observed / predicted latency
        self.max_nodes = self.config.max_nodes
        self.draft_slots = self.config.max_depth * max(64, self.config.branching)
        self._pending: dict = {}
        # measured wall seconds per emitted token, all overhead included (batch 1); speculation's is
        # seconds per round over tokens per round (running means), not one round's luck
        self.pace = {"speculative": None, "plain": None}
        self._round_pace = {"seconds": None, "tokens": None}
        self._paced_rounds = 0  # speculative rounds in those means
        self._measure_left = (
            self.config.measure_rounds
        )  # rounds still to measure before the pace decides
        self._plain_run = self.config.plain_run  # length of the next run of plain steps
        self._plain_left: int | None = None  # plain steps left in the current run (None: no run)
        self._remeasuring = False  # the current round re-measures speculation after a used-up run
        self.copy_scale = self.config.copy_scale
        self._copy_predicted = 0.0  # the predicted accepted tokens of the last copy chain
        self._copy_means = {"predicted": None, "accepted": None}

    @classmethod
    def for_model(
        cls,
        model: Transformer,
        drafter: Drafter,
        directory: str | Path | None = None,
        config: HarnessConfig | None = None,
        progress: bool = False,
        on_measure: Callable[[], None] | None = None,
    ) -> "Harness":
        """The harness with this device's stored cost table, measuring a quick one when none is
        stored; both happen at its first decode. ``on_measure`` is called before measuring.
        Where the model verifies one column only (``TreeLayout.chains_only``), it drafts chains."""
        config = config or HarnessConfig()
        if model.layout.chains_only:
            config = replace(config, branching=1)
        return cls(
            lambda: load_or_calibrate(model, drafter, directory, progress, on_measure), config
        )

    @property
    def costs(self) -> CostTable:
        if not isinstance(self._costs, CostTable):
            self._costs = self._costs()
        return self._costs

    # ---- costs ----------------------------------------------------------------------------------
    def verify_seconds(self, tokens: int, context: int) -> float:
        return self.verify_scale * self.costs.verify_seconds(tokens, context, self.batch)

    def draft_seconds(self, width: int) -> float:
        return self.draft_scale * self.costs.draft_seconds(width, self.batch)

    # ---- planning -------------------------------------------------------------------------------
    def draft(self, drafter: Drafter, state: DraftState, context: int) -> DraftTree:
        """Grow the tree while the policy predicts it pays; return the nodes worth verifying."""
        cfg = self.config
        verify = functools.lru_cache(maxsize=None)(
            lambda n: self.verify_seconds(n, context)
        )  # asked
        draft_seconds = functools.lru_cache(maxsize=None)(self.draft_seconds)  # hundreds of times
        catch_up = self.draft_seconds(1)  # the catch-up step that made the root's output
        spent = catch_up
        expansion = TreeExpansion(self.max_nodes, cfg.max_depth, cfg.branching)
        logp, tokens = drafter.topk(state.root_out, cfg.branching)
        expansion.start(logp[0], tokens[0])
        confidence = logp[0].float().exp()
        values = self.calibrator.calibrate(confidence)
        level = torch.arange(values.numel(), device=values.device)
        widths: list[int] = []
        drafted_s = (
            0.0  # the drafter's own time in the expansions (not the policy's, nor the root's)
        )
        with DraftPass(drafter, state) as drafting:
            while not expansion.done:
                level_values = values[level]
                width, _ = choose_width(
                    values.tolist(),
                    level_values.tolist(),
                    self.child_accept,
                    spent,
                    verify,
                    draft_seconds,
                    self.max_nodes,
                    cfg.min_value,
                )
                if width == 0:
                    break
                chosen = (
                    level[level_values.argsort(descending=True, stable=True)[:width]].sort().values
                )
                expansion.set_frontier(chosen)
                started = time.perf_counter()
                logp, tokens = drafting.run(expansion, cfg.branching)
                if logp.is_cuda:  # the policy reads these values at once anyway
                    torch.cuda.synchronize(logp.device)
                drafted_s += time.perf_counter() - started
                base = expansion.pool_size
                expansion.extend(logp, tokens)
                spent += draft_seconds(width)
                widths.append(width)
                child_conf = logp.float().exp()  # [w, k]
                child_accept = self.calibrator.calibrate(child_conf)  # [w, k]
                child_values = values[chosen][:, None] * child_accept
                self._track_child_accept(child_accept[:, 0])
                confidence = torch.cat([confidence, child_conf.reshape(-1)])
                values = torch.cat([values, child_values.reshape(-1)])
                level = torch.arange(base, expansion.pool_size, device=values.device)
        plan = best_verify_count(values.tolist(), spent, verify, self.max_nodes)
        pool_tokens, parents, _, _ = expansion.pool()
        tree = select_top_nodes(pool_tokens, parents, values.clamp(min=1e-30).log(), plan.count)
        self._pending = {
            "pool": int(values.numel()),
            "widths": widths,
            "nodes": tree.size,
            "depth": tree.max_depth,
            "predicted_accepted": round(plan.expected_tokens - 1, 3),
            "predicted_draft_s": spent,
            "predicted_tree_s": spent - catch_up,
            "drafted_s": drafted_s,
            "predicted_verify_s": verify(tree.size + 1),
            "confidence": confidence[tree.pool_indices].tolist() if tree.size else [],
        }
        return tree

    # ---- seeded sampling -------------------------------------------------------------------------
    def for_sampling(self) -> Planner | None:
        """The drafter's fixed tree (``TreeConfig()``) where the cost table predicts it beats plain
        decoding at batch 1, else copy drafts priced by the table (``CopyPlanner``) where the
        harness has ``copies`` and ``copy_sampling`` is on, else None (plain). Predicted from the
        table alone, with the prior acceptance ``child_accept`` per level along the tree's best
        path, so a seed gives the same text every time on this device."""
        tree, context, costs = TreeConfig(), SAMPLING_CONTEXT, self.costs
        expected_tokens = 1 + sum(self.config.child_accept**d for d in range(1, tree.max_depth + 1))
        round_s = (
            costs.draft_seconds(1, 1)
            + (tree.max_depth - 1) * costs.draft_seconds(tree.top_k, 1)
            + costs.verify_seconds(tree.budget + 1, context, 1)
        )
        plain_s = costs.verify_seconds(1, context, 1)
        if round_s / expected_tokens * (1 + self.config.pace_margin) < plain_s:
            return FixedTree(tree)
        if self.copies is None or not self.config.copy_sampling:
            return None
        return CopyPlanner(costs, self.copies, self.config.copy_scale)

    # ---- copy drafts -----------------------------------------------------------------------------
    def copy_chain(self, session: CopySession, context: int) -> list[int]:
        """The part of the session's copy draft predicted to pay against a plain step, the values
        corrected by ``copy_scale`` (observed over predicted acceptance, a running estimate)."""
        chain, values = session.propose()
        count = (
            best_copy_length(values, self.copy_scale, lambda n: self.verify_seconds(n, context))
            if chain
            else 0
        )
        self._copy_predicted = sum(values[:count])
        return chain[:count]

    def copy_instead(self, session: CopySession, context: int) -> list[int]:
        """The copy draft (``copy_chain``) when it is expected to have as many tokens accepted as a
        drafted round has had (measured; before any, the prior child acceptance down a chain): it
        costs no drafting. Else empty."""
        chain = self.copy_chain(session, context)
        tokens = self._round_pace["tokens"]
        drafted = tokens - 1 if tokens is not None else self.child_accept / (1 - self.child_accept)
        return chain if chain and self.copy_scale * self._copy_predicted >= drafted else []

    def observe_copy(self, proposed: int, accepted: int) -> None:
        if not proposed or self._copy_predicted <= 0:
            return
        w, means = self.config.round_smoothing, self._copy_means
        for key, value in (("predicted", self._copy_predicted), ("accepted", accepted)):
            means[key] = value if means[key] is None else (1 - w) * means[key] + w * value
        self.copy_scale = min(2.0, max(0.05, means["accepted"] / means["predicted"]))

    # ---- plain steps (batch 1) -----------------------------------------------------------------
    def plain_steps(self, context: int) -> int:
        """Plain steps to take before the next round, while speculative rounds are measured slower
        per token than plain steps (everything included: drafting, verification, catch-up,
        bookkeeping): the rest of the current run, which carries over from one decode to the next;
        0 while ``measure_rounds`` rounds measure speculation (at first, and again when a run is
        used up); each re-measure that still loses doubles the next run (up to
        ``max_plain_run``)."""
        spec, plain = self.pace["speculative"], self.pace["plain"]
        if spec is None or self._measure_left > 0:
            return 0
        if plain is None:
            plain = self.verify_seconds(1, context)  # until measured: the table's single-token pass
        if not self._slower(spec, plain):
            self._plain_left = None
            return 0
        if self._plain_left is None:
            self._plain_left = self._plain_run
        elif self._plain_left <= 0:  # the run is used up: re-measure a few rounds
            self._plain_left, self._remeasuring = None, True
            self._measure_left = self.config.measure_rounds
            # ...that weigh about half of speculation's means (not 5% each, after many rounds)
            self._paced_rounds = min(self._paced_rounds, self.config.measure_rounds)
            return 0
        return self._plain_left

    def observe_pace(self, tokens: int, seconds: float, plain: bool) -> None:
        if tokens <= 0:
            return
        if plain:
            old, w = self.pace["plain"], self.config.pace_smoothing
            self.pace["plain"] = (
                seconds / tokens if old is None else (1 - w) * old + w * seconds / tokens
            )
            self._plain_left = (self._plain_left or 0) - tokens
            return
        self._paced_rounds += 1
        w = max(1 / self._paced_rounds, self.config.round_smoothing)
        for key, value in (("seconds", seconds), ("tokens", tokens)):
            old = self._round_pace[key]
            self._round_pace[key] = value if old is None else (1 - w) * old + w * value
        self.pace["speculative"] = self._round_pace["seconds"] / self._round_pace["tokens"]
        self._measure_left = max(0, self._measure_left - 1)
        if self._measure_left:
            return  # decide after the last round measured
        if self.pace["plain"] is not None:
            if not self._slower(self.pace["speculative"], self.pace["plain"]):
                self._plain_run = self.config.plain_run
            elif self._remeasuring:  # the rounds after a plain run lost again
                self._plain_run = min(2 * self._plain_run, self.config.max_plain_run)
        self._remeasuring = False

    def _slower(self, speculative: float, plain: float) -> bool:
        return speculative > plain * (1 + self.config.pace_margin)

    # ---- batched rounds (engine.speculative.batch) ---------------------------------------------
    def batch_config(self, context: int, batch: int) -> TreeConfig:
        """Chain length for the next batched round: the most expected tokens per second for the
        whole batch, with per-depth acceptance ``child_accept`` (0 = plain batched decoding), and
        per round the seconds measured at this batch size and length where there are some (the
        table's otherwise, corrected by how far the table missed the rounds measured at other
        sizes: rows leave a batch one by one, and each new size would otherwise start from the
        table's guess). A 1-token chain every ``explore_every`` rounds keeps the acceptance
        measured; each such round that still loses doubles the interval (up to 16x)."""
        best_length, best_rate, best_seconds, plain_rate = 0, 0.0, 0.0, 0.0
        expected = 1.0
        for length in range(0, min(self.config.max_batch_chain, self.max_nodes) + 1):
            if length:
                expected += self.chain_accept**length
            seconds = self._batch_round_seconds(length, context, batch)
            rate = batch * expected / seconds
            if length == 0:
                plain_rate = rate
            if rate > best_rate:
                best_length, best_rate, best_seconds = length, rate, seconds
        self._batch_rounds += 1
        if best_length == 0 and self.max_nodes and self._batch_rounds % self._explore_every == 0:
            best_length = 1  # keep observing acceptance, or a low estimate never recovers
            measured = self._round_s.get((batch, 1))
            if measured is not None and batch * (1 + self.chain_accept) / measured < plain_rate:
                self._explore_every = min(2 * self._explore_every, 16 * self.config.explore_every)
        elif best_length:
            self._explore_every = self.config.explore_every
        self._pending = {
            "predicted_accepted": round(
                sum(self.chain_accept**d for d in range(1, best_length + 1)), 3
            ),
            "predicted_s": best_seconds,
            "batch": batch,
            "length": best_length,
            "table_s": self._table_round_seconds(best_length, context, batch),
        }
        return TreeConfig.chain(best_length)

    def batch_limit(self) -> TreeConfig:
        """Batched rounds draft chains of at most ``max_batch_chain`` tokens."""
        return TreeConfig.chain(min(self.config.max_batch_chain, self.max_nodes))

    def _batch_round_seconds(self, length: int, context: int, batch: int) -> float:
        measured = self._round_s.get((batch, length))
        if measured is not None:
            return measured
        return self._round_scale["chain" if length else "plain"] * self._table_round_seconds(
            length, context, batch
        )

    def _table_round_seconds(self, length: int, context: int, batch: int) -> float:
        drafting = (
            self.costs.draft_seconds(1, batch) * (length + 1) if length else 0.0
        )  # plain: deferred
        return (
            self.verify_scale * self.costs.verify_seconds(length + 1, context, batch)
            + self.draft_scale * drafting
        )

    def observe_batch(
        self,
        config: TreeConfig,
        trees,
        results,
        draft_s: float,
        verify_s: float,
        stats: Sequence[DecodeStats],
    ) -> None:
        """Update the chain acceptance estimate from every row; log the round in each row's
        stats."""
        pending, self._pending = self._pending, {}
        key, w = (
            (pending.get("batch", len(trees)), pending.get("length", config.budget)),
            self.config.pace_smoothing,
        )
        old = self._round_s.get(key)
        self._round_s[key] = (
            draft_s + verify_s if old is None else (1 - w) * old + w * (draft_s + verify_s)
        )
        if pending.get("table_s"):
            kind, ratio = (
                ("chain" if key[1] else "plain"),
                (draft_s + verify_s) / pending["table_s"],
            )
            self._round_scale[kind] = (1 - w) * self._round_scale[kind] + w * ratio
        tested = accepted = 0
        for tree, result, row_stats in zip(trees, results, stats):
            if tree.size:
                tested += min(result.num_accepted + 1, tree.size)
                accepted += result.num_accepted
            row_stats.rounds.append(
                {
                    "nodes": tree.size,
                    "depth": tree.max_depth,
                    "pool": tree.size,
                    "widths": [],
                    "predicted_accepted": pending.get("predicted_accepted"),
                    "accepted": result.num_accepted,
                    "batch": pending.get("batch", len(trees)),
                    "predicted_s": round(pending.get("predicted_s", 0.0), 5),
                    "seconds": round(draft_s + verify_s, 5),
                }
            )
        if tested:
            w = self.config.smoothing
            self.chain_accept = min(0.999, (1 - w) * self.chain_accept + w * accepted / tested)

    def _track_child_accept(self, best_child: torch.Tensor) -> None:
        if best_child.numel():
            w = self.config.smoothing
            self.child_accept = (1 - w) * self.child_accept + w * float(best_child.mean())

    # ---- feedback -------------------------------------------------------------------------------
    def observe(
        self, tree: DraftTree, result, draft_s: float, verify_s: float, stats: DecodeStats
    ) -> None:
        """Update the acceptance calibration and latency corrections; log the round in
        ``stats.rounds``."""
        pending, self._pending = self._pending, {}
        confidence = pending.get("confidence", [])
        accepted = set(result.accepted_nodes)
        tested = tree.root_children + [
            c for node in result.accepted_nodes for c in tree.children[node]
        ]
        tested = [i for i in tested if i < len(confidence)]  # grafted copy nodes carry none
        self.calibrator.observe([confidence[i] for i in tested], [i in accepted for i in tested])
        w = self.config.latency_smoothing
        if pending.get("predicted_verify_s"):
            ratio = verify_s / (pending["predicted_verify_s"] / self.verify_scale)
            self.verify_scale = (1 - w) * self.verify_scale + w * ratio
        if pending.get("widths") and pending.get("predicted_tree_s"):
            # the expansions' own seconds against the table's: a round's fixed costs (the root's
            # top-k, the policy's arithmetic) are paid whether it expands or not, so they are no
            # part of what one more expansion costs
            ratio = pending["drafted_s"] / (pending["predicted_tree_s"] / self.draft_scale)
            self.draft_scale = (1 - w) * self.draft_scale + w * ratio
        stats.rounds.append(
            {
                "nodes": pending.get("nodes", tree.size),
                "depth": pending.get("depth", tree.max_depth),
                "pool": pending.get("pool", 0),
                "widths": pending.get("widths", []),
                "predicted_accepted": pending.get("predicted_accepted"),
                "accepted": result.num_accepted,
                "predicted_s": round(
                    pending.get("predicted_draft_s", 0.0) + pending.get("predicted_verify_s", 0.0),
                    5,
                ),
                "seconds": round(draft_s + verify_s, 5),
            }
        )


def load_or_calibrate(
    model: Transformer,
    drafter: Drafter,
    directory: str | Path | None = None,
    progress: bool = False,
    on_measure: Callable[[], None] | None = None,
) -> CostTable:
    """The stored cost table for this device/model/dtype/threads, or a quick calibration (then
    stored)."""
    from .calibrate import cost_key, quick_calibrate

    key = cost_key(model, drafter)
    path = table_path(key, directory)
    if path.exists():
        try:
            return CostTable.load(path, expect=key)
        except CostTableError:
            pass  # unreadable or stale: measure again
    if on_measure is not None:
        on_measure()
    table = quick_calibrate(model, drafter, progress=progress)
    try:
        table.save(path)
    except OSError:
        pass  # read-only cache: use it for this process
    return table


def decode_harness(
    model: Transformer,
    drafter: Drafter,
    prompt_ids: Sequence[int],
    params: SamplingParams,
    stop: StopChecker,
    stats: DecodeStats | None = None,
    harness: Harness | None = None,
) -> Iterator[list[int]]:
    """Speculative decoding with the cost-aware harness (lossless like ``decode_speculative``)."""
    harness = harness or Harness.for_model(model, drafter)
    return decode_speculative(model, drafter, prompt_ids, params, stop, stats, harness)
