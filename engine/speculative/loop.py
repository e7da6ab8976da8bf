"""The speculative decode loop: prefill -> draft a tree -> verify in one target pass -> commit.

Invariant between rounds: the target cache holds every committed token but
the last one (the *root*), and the drafter cache holds one entry per target
feature already seen (entry i = target feature at position i + token i+1).
Each round drafts a tree below the root (EAGLE-2 expansion, frontier run in
one drafter pass with a tree mask), runs (root, tree) through the target
with the tree mask, verifies losslessly, copies the accepted path's KV into
place and feeds the accepted tokens' target features to the drafter.

The tree of each round comes from a planner: ``FixedTree`` (one
``TreeConfig`` shape every round) or the cost-aware ``engine.planning.harness.Harness``;
``DraftPass`` runs a growing tree's frontiers through the drafter for both.

Not here: tree bookkeeping (``engine.speculative.tree``), acceptance rules
(``engine.speculative.verify``), stop rules (``engine.decode.stopping``), batches
(``engine.speculative.batch``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Iterator, Sequence

import torch

from ..decode.autoregressive import prefill
from ..decode.commit import commit_tokens
from ..decode.prefix_cache import PrefixCache, prefill_split
from ..decode.sampling import SamplingParams, make_generator, pick_token
from ..decode.stats import DecodeStats
from ..decode.stopping import StopChecker
from ..runtime.exact_rows import KEY_BLOCK
from ..runtime.layout import TreeLayout
from ..runtime.model import Transformer
from .copy_draft import CopySession
from .drafter import Drafter
from .planner import Planner, TreeConfig
from .tree import DraftTree, TreeExpansion, graft_chain
from .verify import verify


@dataclass
class DraftState:
    """The drafter's side of one sequence: its cache and the output at the root."""

    cache: "object"
    root_out: torch.Tensor  # [1, H] drafter output whose head predicts the root's child


class DraftPass:
    """Runs frontiers of a growing tree through the drafter; the drafter cache is restored on close.

    Each ``run`` feeds the expansion's current frontier (tree mask over the nodes written so
    far, positions = root position + depth) and returns the top-``k`` children per frontier
    node as (log-probs [f, k], target token ids [f, k]).
    """

    def __init__(self, drafter: Drafter, state: DraftState) -> None:
        self.drafter, self.state = drafter, state
        self.base = state.cache.length
        self.outputs: dict[int, torch.Tensor] = {}  # pool index -> drafter output [H]
        self.slot_pool: list[int] = []  # pool index of each tree slot written so far
        self.slot_positions: list[
            torch.Tensor
        ] = []  # drafter position of each written slot, per frontier

    def __enter__(self) -> "DraftPass":
        return self

    def __exit__(self, *exc) -> None:
        self.state.cache.rollback(self.base)

    def run(self, expansion: TreeExpansion, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        state, cache, base = self.state, self.state.cache, self.base
        idx, tokens, parents, depths = expansion.frontier()
        hidden = torch.stack(
            [state.root_out[0] if p < 0 else self.outputs[p] for p in parents.tolist()]
        )
        self.slot_pool.extend(idx.tolist())
        ancestors = expansion.frontier_ancestor_mask(idx)[:, self.slot_pool]  # [f, written]
        mask = torch.cat([ancestors.new_ones(len(idx), base), ancestors], dim=1)
        positions = base - 1 + depths
        self.slot_positions.append(positions)
        key_positions = torch.cat(
            [torch.arange(base, device=positions.device), *self.slot_positions]
        )
        out = self.drafter(
            hidden[None],
            tokens[None],
            cache,
            positions=positions,
            mask=mask,
            key_positions=key_positions,
        )[0]  # [f, H]
        cache.commit(len(idx))
        self.outputs.update(zip(idx.tolist(), out))
        return self.drafter.topk(out, k)


def draft_tree(drafter: Drafter, state: DraftState, config: TreeConfig) -> DraftTree:
    """Grow an EAGLE-2 tree below the root; the drafter cache is left as it was."""
    expansion = TreeExpansion(config.budget, config.max_depth, config.top_k)
    expansion.start(*[x[0] for x in drafter.topk(state.root_out, config.top_k)])
    with DraftPass(drafter, state) as drafting:
        while not expansion.done:
            expansion.extend(*drafting.run(expansion, config.top_k))
    return expansion.finish()


class FixedTree(Planner):
    """Planner with a fixed tree shape (``TreeConfig``): the EAGLE-2 tree every round
    (batched rounds: the same shape for every row)."""

    def __init__(self, config: TreeConfig | None = None) -> None:
        self.config = config or TreeConfig()
        self.max_nodes = self.config.budget
        self.max_depth = self.config.max_depth
        self.draft_slots = self.config.max_depth * self.config.top_k

    def draft(self, drafter: Drafter, state: DraftState, context: int) -> DraftTree:
        return draft_tree(drafter, state, self.config)

    def batch_config(self, context: int, batch: int) -> TreeConfig:
        return self.config

    def batch_limit(self) -> TreeConfig:
        return self.config


def drafter_catch_up(
    drafter: Drafter, state: DraftState, taps: torch.Tensor, next_tokens: Sequence[int]
) -> None:
    """Feed target features ``taps`` [1, n, 3H] with the tokens that follow them; update the root
    output."""
    cache = state.cache
    tokens = torch.tensor([list(next_tokens)], device=taps.device)
    positions = torch.arange(cache.length, cache.length + tokens.shape[1], device=taps.device)
    out = drafter(drafter.fuse(taps), tokens, cache, positions=positions)
    cache.commit(tokens.shape[1])
    state.root_out = out[:, -1]


def verify_pass(model: Transformer, cache, root: int, tree: DraftTree):
    """Run (root, tree nodes) through the target with the tree mask; logits [N+1, V], taps and
    the cache slot of each row (``tree_slots``)."""
    tokens, positions, mask, slots = verify_inputs(cache, root, tree, model.layout)
    out = model(
        tokens,
        cache,
        positions=positions,
        mask=mask,
        taps=True,
        slots=slots if model.layout.lanes else None,
    )  # contiguous: a plain slice write
    return out.logits[0], out.taps, slots


def verify_inputs(cache, root: int, tree: DraftTree, layout: TreeLayout):
    """What a verification pass of (root, tree) after ``cache``'s prefix feeds the target: tokens
    [1, N+1], positions [N+1], mask [N+1, S] (the prefix, then the tree) and slots [N+1]."""
    length, n = cache.length, tree.size
    device = cache.k.device
    tokens = torch.tensor([[root] + tree.token_list], device=device)
    depths = tree.depths_with_root()
    slots = tree_slots(depths, tree.parents, length, layout.lane_stride).to(device)
    mask = torch.zeros(n + 1, int(slots.max()) + 1, dtype=torch.bool, device=device)
    mask[:, :length] = True
    mask[:, slots] = tree.mask_with_root().to(device)
    return tokens, (length + depths).to(device), mask, slots


def tree_slots(
    depths: torch.Tensor, parents: torch.Tensor, length: int, lane_stride: int
) -> torch.Tensor:
    """Cache slots of the rows (root first; ``depths`` [N+1], node ``parents`` [N], -1 = root):
    contiguous after the prefix, or with ``lane_stride`` node (depth d, column c) at
    length + lane_stride * c + d (``lane_columns``), so that every node sits in the vector lane
    of its position and after its ancestors (``TreeLayout``)."""
    if not lane_stride:
        return torch.arange(length, length + len(depths))
    return length + lane_stride * lane_columns(depths, parents) + depths


def lane_columns(depths: torch.Tensor, parents: torch.Tensor) -> torch.Tensor:
    """A column per row (the root's is 0), distinct within a depth and never left of the parent's,
    so that along every path slots grow with positions: a row then sums its keys in the order
    plain decoding does (keys out of order changed a bf16 attention output in a 128-token check)."""
    depth_of, parent_row = depths.tolist(), [p + 1 for p in parents.tolist()]
    column = [0] * len(depth_of)
    for d in sorted(set(depth_of) - {0}):
        rows = sorted(
            (r for r in range(1, len(depth_of)) if depth_of[r] == d),
            key=lambda r: column[parent_row[r - 1]],
        )
        last = -1
        for r in rows:
            column[r] = last = max(column[parent_row[r - 1]], last + 1)
    return torch.tensor(column, dtype=depths.dtype, device=depths.device)


def fit_lanes(tree: DraftTree, length: int, layout: TreeLayout) -> DraftTree:
    """``tree`` without the nodes (and their descendants) whose lane-aligned slot would fall in
    a later block of keys than their position, or in a column from ``layout.max_columns`` on
    (``engine.runtime.exact_rows``)."""
    lane_stride, max_columns = layout.lane_stride, layout.max_columns
    if not lane_stride or not tree.size:
        return tree
    depths = tree.depths_with_root()
    slots = tree_slots(depths, tree.parents, length, lane_stride)
    dropped = slots // KEY_BLOCK != (length + depths) // KEY_BLOCK
    columns = (slots - length - depths) // lane_stride
    if max_columns is not None:
        dropped |= columns >= max_columns
    dropped = dropped[1:]
    return tree.without(dropped.nonzero().flatten().tolist()) if dropped.any() else tree


def tree_room(max_nodes: int, layout: TreeLayout) -> int:
    """Cache slots a round may use past the prefix: root and nodes, spread into lane columns
    (at most ``layout.max_columns`` of them: a chain uses one)."""
    lane_stride, max_columns = layout.lane_stride, layout.max_columns
    if not lane_stride:
        return max_nodes + 2
    spread = lane_stride * (max_nodes + 1)
    return (
        spread
        if max_columns is None
        else min(spread, lane_stride * (max_columns - 1) + max_nodes + 2)
    )


class _PlainRun:
    """Steps inside a speculative decode that do not run the drafter: plain decoding steps, one
    token per target pass computed exactly as ``decode_autoregressive`` does, and copy rounds
    (a copy draft, ``engine.speculative.copy_draft``, verified in one pass) where the planner
    prices one to pay; the taps are kept for the drafter's catch-up. In a decode without a drafter
    (``speculating`` False) the steps keep no taps and record no rounds."""

    def __init__(
        self,
        model,
        cache,
        root: int,
        params,
        stop: StopChecker,
        stats: DecodeStats,
        generator,
        planner: Planner,
        copies: "CopySession | None",
        speculating: bool = True,
    ) -> None:
        self.model, self.cache, self.root, self.params = model, cache, root, params
        self.speculating = speculating
        self.stop, self.stats, self.generator = stop, stats, generator
        self.planner, self.copies = planner, copies
        self.tokens: list[int] = []
        self.taps: list[torch.Tensor] = []

    def steps(self, count: int, first: list[int] | None = None) -> Iterator[list[int]]:
        """At least ``count`` tokens (a copy round may give more), fewer if the decode stops;
        ``first``: the copy draft of the first step, already priced."""
        token = self.root
        while len(self.tokens) < count:
            started = time.perf_counter()
            if first:
                chain, first = first, None
            else:
                chain = (
                    self.planner.copy_chain(self.copies, self.cache.length)
                    if self.copies is not None
                    else []
                )
            tokens, taps, accepted = self._copy(token, chain) if chain else self._plain(token)
            seconds = time.perf_counter() - started
            self.stats.verify_s += seconds
            self.stats.target_forwards += 1
            if self.speculating:
                self._record(len(chain), accepted, seconds)
                self.taps.append(taps)
            self.tokens += tokens
            if self.copies is not None:
                self.copies.commit(tokens)
            token = tokens[-1]
            emitted = commit_tokens(tokens, self.stop, self.stats)
            if emitted:
                yield emitted
            if self.stop.done:
                return

    def _record(self, copied: int, accepted: int, seconds: float) -> None:
        self.stats.record_round(accepted, copied)
        self.stats.rounds.append(
            {
                "plain": not copied,
                "copy": copied,
                "nodes": copied,
                "depth": copied,
                "accepted": accepted,
                "predicted_accepted": None,
                "predicted_s": None,
                "seconds": round(seconds, 5),
            }
        )

    def _plain(self, token: int) -> tuple[list[int], torch.Tensor | None, int]:
        out = self.model(
            torch.tensor([[token]], device=self.cache.k.device),
            self.cache,
            taps=self.speculating,
        )
        self.cache.commit(1)
        return (
            [pick_token(out.logits[0, -1], self.stop.tokens, self.params, self.generator)],
            out.taps,
            0,
        )

    def _copy(self, token: int, chain: list[int]) -> tuple[list[int], torch.Tensor, int]:
        model, cache = self.model, self.cache
        tree = fit_lanes(DraftTree.chain(chain), cache.length, model.layout)
        logits, taps, slots = verify_pass(model, cache, token, tree)
        result = verify(tree, logits, self.stop.tokens, self.params, self.generator)
        rows = result.kept_rows
        cache.compact(slots[rows])
        self.planner.observe_copy(len(chain), result.num_accepted)
        return result.tokens, taps[:, rows], result.num_accepted


@torch.inference_mode()
def decode_speculative(
    model: Transformer,
    drafter: Drafter | None,
    prompt_ids: Sequence[int],
    params: SamplingParams,
    stop: StopChecker,
    stats: DecodeStats | None = None,
    planner: Planner | None = None,
    *,
    prefixes: PrefixCache | None = None,
    prefix_len: int = 0,
) -> Iterator[list[int]]:
    """Yield accepted tokens per round; greedy output equals ``decode_autoregressive`` exactly
    (the reference decoder the tests compare against).

    ``planner`` drafts each round's tree and observes its outcome (default ``FixedTree()``;
    ``engine.planning.harness.Harness`` sizes trees from measured costs). Without a ``drafter``
    every round is a plain step (the planner is not asked); the prompt's first ``prefix_len``
    tokens may then be reused from ``prefixes`` (``engine.decode.prefix_cache``).
    """
    if drafter is not None and prefixes is not None:
        raise ValueError("prompt prefixes are kept for plain decodes only (no drafter)")
    planner = planner if planner is not None else FixedTree()
    stats = stats if stats is not None else DecodeStats()
    stats.prompt_tokens = len(prompt_ids)
    if stop.done:
        return
    capacity = len(prompt_ids) + params.max_new_tokens + _round_room(planner, drafter, model)
    cache = model.new_cache(capacity)
    generator = make_generator(params.seed)
    started = time.perf_counter()
    if prefixes is not None:
        out = prefill_split(model, prompt_ids, cache, prefixes, prefix_len)
    else:
        out = prefill(model, prompt_ids, cache, taps=drafter is not None)
    root = pick_token(out.logits[0, -1], stop.tokens, params, generator)
    stats.prefill_s = time.perf_counter() - started
    started = time.perf_counter()
    emitted = commit_tokens([root], stop, stats)
    if emitted:
        yield emitted
    if stop.done:
        return
    if drafter is None:
        run = _PlainRun(model, cache, root, params, stop, stats, generator, planner, None, False)
        yield from run.steps(params.max_new_tokens)
        stats.decode_s = time.perf_counter() - started
        return
    state = DraftState(drafter.new_cache(capacity + planner.draft_slots), root_out=None)
    copies = planner.copies.start(list(prompt_ids) + [root]) if planner.copies is not None else None
    # what the drafter has not been fed yet (target features, the tokens after them): fed at the
    # next round that drafts, so plain steps (or a whole plain decode) never run the drafter
    pending_taps, pending_tokens = [out.taps], list(prompt_ids[1:]) + [root]
    resuming = True  # the pending tokens come from the prompt or plain steps, not the last round
    while True:
        paced = time.perf_counter()
        steps = planner.plain_steps(cache.length)
        # a chain-only model verifies one chain a round: a copy draft expected to beat the drafter's
        # goes alone
        copy_alone = (
            planner.copy_instead(copies, cache.length)
            if not steps and copies is not None and model.layout.chains_only
            else []
        )
        if steps or copy_alone:  # speculation predicted not to pay (plain steps), or a copy round
            run = _PlainRun(model, cache, root, params, stop, stats, generator, planner, copies)
            yield from run.steps(steps or 1, first=copy_alone)
            planner.observe_pace(len(run.tokens), time.perf_counter() - paced, plain=bool(steps))
            if stop.done:
                break
            pending_taps.append(torch.cat(run.taps, dim=1))
            pending_tokens += run.tokens
            root = run.tokens[-1]
            resuming = True
            continue
        feeding = time.perf_counter()
        drafter_catch_up(drafter, state, torch.cat(pending_taps, dim=1), pending_tokens)
        pending_taps, pending_tokens = [], []
        t0 = time.perf_counter()  # drafting time leaves the catch-up out
        if resuming:  # feeding what plain steps left is a one-time cost, not this round's pace
            paced += t0 - feeding
        resuming = False
        tree = planner.draft(drafter, state, cache.length)
        chain = _graftable_copy(planner, copies, model, cache.length)
        if chain:
            tree = graft_chain(tree, chain)
        tree = fit_lanes(tree, cache.length, model.layout)
        t1 = time.perf_counter()
        logits, taps, slots = verify_pass(model, cache, root, tree)
        result = verify(tree, logits, stop.tokens, params, generator)
        t2 = time.perf_counter()
        stats.draft_s += t1 - t0
        stats.verify_s += t2 - t1
        stats.target_forwards += 1
        planner.observe(tree, result, t1 - t0, t2 - t1, stats)
        if chain:
            planner.observe_copy(len(chain), _common_prefix(chain, result.tokens[:-1]))
        stats.record_round(result.num_accepted, tree.max_depth)
        emitted = commit_tokens(result.tokens, stop, stats)
        if emitted:
            yield emitted
        if stop.done:
            break
        rows = result.kept_rows
        cache.compact(slots[rows])
        if copies is not None:
            copies.commit(result.tokens)
        pending_taps, pending_tokens = [taps[:, rows]], list(result.tokens)
        root = result.tokens[-1]
        planner.observe_pace(len(result.tokens), time.perf_counter() - paced, plain=False)
    stats.decode_s = time.perf_counter() - started


def _round_room(planner: Planner, drafter: Drafter | None, model: Transformer) -> int:
    """Cache slots a round may use past the committed tokens: a plain step's, or the planner's
    largest tree with a grafted copy draft."""
    if drafter is None:
        return tree_room(0, model.layout)
    copy_nodes = planner.copies.max_length if planner.copies is not None else 0
    return tree_room(planner.max_nodes + copy_nodes, model.layout)


def _graftable_copy(
    planner: Planner, copies: "CopySession | None", model: Transformer, context: int
) -> list[int]:
    """The copy draft to graft onto a drafted tree: only where the model verifies several columns
    (a chain-only model verifies the drafter's chain; copies then go in the rounds without it)."""
    if copies is None or model.layout.chains_only:
        return []
    return planner.copy_chain(copies, context)


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n
