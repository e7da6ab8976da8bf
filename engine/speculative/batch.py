"""Speculative decoding of C sequences at once, each accepting its own number of tokens per round.

The target side comes in two layouts. ``RowTargets`` (an int4 target in exact
mode, ``engine.runtime.int4_rows.Int4Rows``): one KV cache per sequence
(the rows of one tensor), laid out as its single-sequence decode lays it out,
and every round one pass whose matmuls run over all rows at once and whose
attention runs per row (neighbouring one-token rows over the same aligned
span in one call): a row's numbers do not depend on its batch-mates, so every
greedy row equals its single-sequence decode in int4 too. ``SharedTarget``
(any other model): one cache with common slot numbers, every row with a
validity mask over the slots and its own positions (``BatchLayout``); prompts
are left-padded; each round every row writes (root, its tree) at the same
slots [S0, S0+N+1) (smaller trees padded with dummy tokens that see only
themselves), keeps its root + accepted path at [S0, S0+m) and the common
length grows by the largest m; holes left by shorter rows are masked and
re-packed when the cache would overflow. Its rows equal their single-sequence
decodes exactly in fp32; in bf16 the padding and the fused kernels can flip a
near-tie.

The drafter always uses a ``BatchLayout`` (its numbers shape drafts, never the
output). A plain round (budget 0) leaves the drafter alone: the tokens it
feeds the drafter wait, and the next round that drafts feeds them all in one
pass. Finished rows leave the batch. Verification per row is
``engine.speculative.verify``.

Each round's tree shape comes from the ``Planner`` (``engine.speculative.planner``): one
``TreeConfig`` every round (``FixedTree``) or the harness choosing it per round. Not here:
single-sequence decoding (``engine.speculative.loop``), tree bookkeeping
(``engine.speculative.tree``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Iterator, Sequence

import torch

from ..decode.autoregressive import prefill
from ..decode.commit import commit_tokens
from ..decode.sampling import SamplingParams, make_generator, pick_token
from ..decode.stats import DecodeStats
from ..decode.stopping import StopChecker
from ..runtime.int4_rows import Int4Rows, RowPass
from ..runtime.model import Transformer
from .drafter import Drafter
from .loop import FixedTree, fit_lanes, tree_room, verify_inputs
from .planner import Planner, TreeConfig
from .tree import DraftTree, TreeExpansion
from .verify import verify


# ---- cache layout --------------------------------------------------------------------------------
class BatchLayout:
    """A batch KV cache plus, per row and slot, validity and rope position."""

    def __init__(self, cache, batch: int) -> None:
        self.cache = cache
        device = cache.k.device
        self.valid = torch.zeros(batch, cache.capacity, dtype=torch.bool, device=device)
        self.positions = torch.zeros(batch, cache.capacity, dtype=torch.long, device=device)
        self.repacks = 0

    @property
    def length(self) -> int:
        return self.cache.length

    def prefix_mask(self, queries: int, length: int | None = None) -> torch.Tensor:
        """[B, queries, length]: every query of a row sees that row's valid slots before ``length``
        (default: the committed length)."""
        length = self.length if length is None else length
        return self.valid[:, None, :length].expand(-1, queries, -1)

    def keep(self, rows: Sequence[int]) -> None:
        """Drop every other row (finished sequences leave the batch)."""
        index = torch.tensor(list(rows), dtype=torch.long, device=self.valid.device)
        self.cache.k, self.cache.v = self.cache.k[:, index], self.cache.v[:, index]
        self.valid, self.positions = self.valid[index], self.positions[index]

    def commit_rows(
        self, start: int, kept: Sequence[Sequence[int]], positions: Sequence[int]
    ) -> None:
        """Per row: move slots ``start + kept[r]`` to ``start..``; mark them valid with positions
        ``positions[r]..``; commit the longest row's count."""
        cache = self.cache
        longest = max(len(k) for k in kept)
        for row, (slots, first) in enumerate(zip(kept, positions)):
            count = len(slots)
            source = torch.tensor(list(slots), device=cache.k.device) + start
            dest = torch.arange(start, start + count, device=cache.k.device)
            if not torch.equal(source, dest):
                cache.k[:, row, :, dest] = cache.k[:, row, :, source]
                cache.v[:, row, :, dest] = cache.v[:, row, :, source]
            self.valid[row, start : start + longest] = False
            self.valid[row, start : start + count] = True
            self.positions[row, start : start + count] = torch.arange(
                first, first + count, device=dest.device
            )
        cache.commit(longest)

    def ensure_room(self, needed: int) -> None:
        """Re-pack rows (valid slots right-aligned) when fewer than ``needed`` free slots remain."""
        cache = self.cache
        if cache.length + needed <= cache.capacity:
            return
        counts = self.valid[:, : cache.length].sum(1)
        width = int(counts.max())
        if width + needed > cache.capacity:
            raise RuntimeError(
                f"batch KV cache of {cache.capacity} slots cannot hold {width + needed}"
            )
        k, v = torch.zeros_like(cache.k), torch.zeros_like(cache.v)
        valid, positions = torch.zeros_like(self.valid), torch.zeros_like(self.positions)
        for row in range(self.valid.shape[0]):
            slots = self.valid[row, : cache.length].nonzero().flatten()
            dest = torch.arange(width - len(slots), width, device=slots.device)
            k[:, row, :, dest], v[:, row, :, dest] = (
                cache.k[:, row, :, slots],
                cache.v[:, row, :, slots],
            )
            valid[row, dest], positions[row, dest] = True, self.positions[row, slots]
        cache.k, cache.v, self.valid, self.positions = k, v, valid, positions
        cache.rollback(0)
        cache.commit(width)
        self.repacks += 1


# ---- one sequence of the batch -------------------------------------------------------------------
@dataclass
class _Row:
    index: int  # position in the caller's list
    prompt: list[int]
    params: SamplingParams
    stop: StopChecker
    stats: DecodeStats
    generator: torch.Generator | None
    root: int = 0
    length: int = 0  # tokens in the target cache (the root's position)
    root_out: torch.Tensor | None = None
    history: list[int] = field(default_factory=list)
    # tokens (and the target features before them) the drafter has not been fed yet: plain
    # rounds defer the catch-up until a round drafts again
    pending_taps: list[torch.Tensor] = field(default_factory=list)
    pending_tokens: list[int] = field(default_factory=list)
    pending_first: int = 0  # position of the first pending token


def _left_padded(
    rows: Sequence[_Row], device
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """Prompt tokens [B, P] left-padded, positions [B, P], validity [B, P], P."""
    width = max(len(r.prompt) for r in rows)
    tokens = torch.zeros(len(rows), width, dtype=torch.long, device=device)
    positions = torch.zeros_like(tokens)
    valid = torch.zeros(len(rows), width, dtype=torch.bool, device=device)
    for i, r in enumerate(rows):
        n = len(r.prompt)
        tokens[i, width - n :] = torch.tensor(r.prompt, device=device)
        positions[i, width - n :] = torch.arange(n, device=device)
        valid[i, width - n :] = True
    return tokens, positions, valid, width


def _causal_valid_mask(valid: torch.Tensor, prefix: torch.Tensor | None = None) -> torch.Tensor:
    """[B, 1, T, S+T] for T new slots: valid prefix keys, then causal over valid new keys; every
    query sees itself (padding included, so no row of the attention is empty)."""
    b, t = valid.shape
    causal = torch.ones(t, t, dtype=torch.bool, device=valid.device).tril()
    new = (causal[None] & valid[:, None, :]) | torch.eye(t, dtype=torch.bool, device=valid.device)[
        None
    ]
    if prefix is None:
        return new[:, None]
    return torch.cat([prefix[:, None, :] & valid[:, :, None], new], dim=-1)[:, None]


# ---- drafting ------------------------------------------------------------------------------------
class BatchDraftPass:
    """Grows one tree per row with batched drafter passes; the drafter layout is restored on
    exit."""

    def __init__(self, drafter: Drafter, layout: BatchLayout, rows: Sequence[_Row]) -> None:
        self.drafter, self.layout, self.rows = drafter, layout, rows
        self.base = layout.length
        self.outputs: list[dict[int, torch.Tensor]] = [{} for _ in rows]
        self.slots: list[list[int]] = [[] for _ in rows]  # pool index per written slot, -1 = dummy
        self.slot_positions: list[torch.Tensor] = []  # [B, f] per pass

    def __enter__(self) -> "BatchDraftPass":
        return self

    def __exit__(self, *exc) -> None:
        self.layout.cache.rollback(self.base)

    def run(
        self, expansions: Sequence[TreeExpansion], k: int
    ) -> list[tuple[torch.Tensor, torch.Tensor]]:
        layout, cache, device = self.layout, self.layout.cache, self.layout.valid.device
        frontiers = [e.frontier() for e in expansions]
        width = max(len(f[0]) for f in frontiers)
        b, hidden_size = len(self.rows), self.drafter.config.hidden_size
        hidden = torch.zeros(
            b, width, hidden_size, dtype=self.drafter.fc.weight.dtype, device=device
        )
        tokens = torch.zeros(b, width, dtype=torch.long, device=device)
        positions = torch.zeros(b, width, dtype=torch.long, device=device)
        written = len(self.slots[0])
        tree_mask = torch.zeros(b, width, written + width, dtype=torch.bool, device=device)
        real_query = torch.zeros(b, width, dtype=torch.bool, device=device)
        for r, ((idx, toks, parents, depths), row, expansion) in enumerate(
            zip(frontiers, self.rows, expansions)
        ):
            f = len(idx)
            outs = self.outputs[r]
            hidden[r, :f] = torch.stack(
                [row.root_out if p < 0 else outs[p] for p in parents.tolist()]
            )
            tokens[r, :f], positions[r, :f] = toks, row.length - 1 + depths
            self.slots[r].extend(idx.tolist() + [-1] * (width - f))
            real = [i for i, s in enumerate(self.slots[r]) if s >= 0]
            ancestors = expansion.frontier_ancestor_mask(idx)[:, [self.slots[r][i] for i in real]]
            tree_mask[r, :f, real] = ancestors
            tree_mask[r, f:, written + f : written + width] = True  # dummies: only dummy slots
            real_query[r, :f] = True
        self.slot_positions.append(positions)
        prefix = (
            layout.prefix_mask(width, self.base) & real_query[:, :, None]
        )  # dummies skip the prefix
        mask = torch.cat([prefix, tree_mask], dim=-1)[:, None]
        key_positions = torch.cat([layout.positions[:, : self.base], *self.slot_positions], dim=1)
        out = self.drafter(
            hidden, tokens, cache, positions=positions, mask=mask, key_positions=key_positions
        )
        cache.commit(width)
        results = []
        for r, (idx, *_rest) in enumerate(frontiers):
            self.outputs[r].update(zip(idx.tolist(), out[r, : len(idx)]))
            results.append(self.drafter.topk(out[r, : len(idx)], k))
        return results


def draft_trees(
    drafter: Drafter, layout: BatchLayout, rows: Sequence[_Row], config: TreeConfig
) -> list[DraftTree]:
    """One EAGLE-2 tree per row (shape ``config``), drafted in batched passes."""
    if config.budget == 0:
        return [DraftTree.empty() for _ in rows]
    expansions = [TreeExpansion(config.budget, config.max_depth, config.top_k) for _ in rows]
    for expansion, row in zip(expansions, rows):
        expansion.start(*[x[0] for x in drafter.topk(row.root_out[None], config.top_k)])
    with BatchDraftPass(drafter, layout, rows) as drafting:
        while not expansions[0].done:
            for expansion, children in zip(expansions, drafting.run(expansions, config.top_k)):
                expansion.extend(*children)
    return [e.finish() for e in expansions]


def drafter_catch_up(
    drafter: Drafter,
    layout: BatchLayout,
    rows: Sequence[_Row],
    taps: Sequence[torch.Tensor],
    tokens: Sequence[Sequence[int]],
    first_positions: Sequence[int],
) -> None:
    """Per row feed target features ``taps[r]`` [m, 3H] with the tokens that follow them."""
    device = layout.valid.device
    width = max(len(t) for t in tokens)
    feats = torch.zeros(len(rows), width, taps[0].shape[-1], dtype=taps[0].dtype, device=device)
    ids = torch.zeros(len(rows), width, dtype=torch.long, device=device)
    positions = torch.zeros_like(ids)
    valid = torch.zeros(len(rows), width, dtype=torch.bool, device=device)
    for r, (tap, toks, first) in enumerate(zip(taps, tokens, first_positions)):
        m = len(toks)
        feats[r, :m], ids[r, :m] = tap, torch.tensor(list(toks), device=device)
        positions[r, :m] = torch.arange(first, first + m, device=device)
        valid[r, :m] = True
    start = layout.length
    mask = _causal_valid_mask(valid, layout.valid[:, :start])
    key_positions = torch.cat([layout.positions[:, :start], positions], dim=1)
    out = drafter(
        drafter.fuse(feats),
        ids,
        layout.cache,
        positions=positions,
        mask=mask,
        key_positions=key_positions,
    )
    layout.cache.commit(width)
    layout.valid[:, start : start + width] = valid
    layout.positions[:, start : start + width] = positions
    for r, row in enumerate(rows):
        row.root_out = out[r, len(tokens[r]) - 1]


def defer_catch_up(
    row: _Row, taps: torch.Tensor, tokens: Sequence[int], first_position: int
) -> None:
    """Queue target features ``taps`` [m, 3H] and the m tokens that follow them for the drafter."""
    if not row.pending_tokens:
        row.pending_first = first_position
    row.pending_taps.append(taps)
    row.pending_tokens.extend(tokens)


def flush_catch_up(
    drafter: Drafter, layout: BatchLayout, rows: Sequence[_Row], config: TreeConfig
) -> None:
    """Feed every row's queued tokens to the drafter in one pass, with room left for a tree of
    shape ``config`` (tree passes are rolled back before the next catch-up writes). A drafter
    with a sliding window is fed only the last ``window`` of them: the drafter is one layer, so
    a token's keys depend on that token alone, and no later query sees keys further back (the
    prompt and long plain runs cost a window, not their length)."""
    if drafter.config.window is not None:
        for row in rows:
            _keep_last(row, drafter.config.window)
    pending = max(len(row.pending_tokens) for row in rows)
    layout.ensure_room(pending + max(config.max_depth * config.top_k, config.budget + 1))
    if pending:
        drafter_catch_up(
            drafter,
            layout,
            rows,
            [torch.cat(row.pending_taps) for row in rows],
            [row.pending_tokens for row in rows],
            [row.pending_first for row in rows],
        )
    for row in rows:
        row.pending_taps, row.pending_tokens = [], []


def _keep_last(row: _Row, count: int) -> None:
    """Drop all but the last ``count`` queued tokens (and their features) of ``row``."""
    extra = len(row.pending_tokens) - count
    if extra > 0:
        row.pending_taps = [torch.cat(row.pending_taps)[extra:]]
        row.pending_tokens = row.pending_tokens[extra:]
        row.pending_first += extra


# ---- the target side -----------------------------------------------------------------------------
class SharedTarget:
    """The target's half of a batch in one KV cache (``BatchLayout``): prompts left-padded and
    prefilled together, one module pass per round. A row's numbers may depend on its batch in
    half precision (padding, holes, fused attention), so greedy rows equal their single-sequence
    decodes exactly in fp32 only."""

    def __init__(self, model: Transformer, rows: Sequence[_Row], limit: TreeConfig) -> None:
        self.model = model
        width, budget = max(len(r.prompt) for r in rows), max(r.params.max_new_tokens for r in rows)
        self.layout = BatchLayout(
            model.new_cache(width + budget + limit.budget + 2, batch=len(rows)), len(rows)
        )

    @property
    def length(self) -> int:
        return self.layout.length

    def prefill(self, rows: Sequence[_Row]) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Logits [B, V] after each prompt and each prompt's target features [P, 3H]."""
        tokens, positions, valid, width = _left_padded(rows, self.model.embed_tokens.weight.device)
        out = self.model(
            tokens,
            self.layout.cache,
            positions=positions,
            mask=_causal_valid_mask(valid),
            taps=True,
            logits_at=slice(-1, None),
        )
        self.layout.cache.commit(width)
        self.layout.valid[:, :width], self.layout.positions[:, :width] = valid, positions
        return out.logits[:, -1], [
            out.taps[r, width - len(row.prompt) :] for r, row in enumerate(rows)
        ]

    def verify(self, rows: Sequence[_Row], trees: Sequence[DraftTree]):
        """One target pass over every row's (root, tree): (trees, logits [N+1, V] and taps [N+1, 3H]
        per row)."""
        layout, device = self.layout, self.layout.valid.device
        layout.ensure_room(max(t.size for t in trees) + 1)
        n, b = max(t.size for t in trees), len(rows)
        tokens = torch.zeros(b, n + 1, dtype=torch.long, device=device)
        positions = torch.zeros_like(tokens)
        tree_mask = torch.eye(n + 1, dtype=torch.bool, device=device).repeat(b, 1, 1)
        for r, (row, tree) in enumerate(zip(rows, trees)):
            size = tree.size + 1
            tokens[r, :size] = torch.tensor([row.root] + tree.token_list, device=device)
            positions[r] = row.length
            positions[r, 1:size] += tree.depths.to(device)
            tree_mask[r, :size, :size] = tree.mask_with_root().to(device)
        mask = torch.cat([layout.prefix_mask(n + 1), tree_mask], dim=-1)[:, None]
        out = self.model(tokens, layout.cache, positions=positions, mask=mask, taps=True)
        self._start = layout.length
        return trees, list(out.logits), list(out.taps)

    def commit(self, rows: Sequence[_Row], results) -> None:
        """Keep each row's root and accepted path (``result.kept_rows``) after the prefix."""
        self.layout.commit_rows(
            self._start, [result.kept_rows for result in results], [row.length for row in rows]
        )

    def keep(self, live: Sequence[int]) -> None:
        self.layout.keep(live)


class RowTargets:
    """The target's half of a batch as one KV cache per sequence (row r of one batch tensor),
    laid out as its single-sequence decode lays it out, every round's pass shared through
    ``Int4Rows.run_rows`` (an int4 target in exact mode): each row computed bit for bit as
    alone, so greedy rows equal their single-sequence decodes exactly, whatever else is in the
    batch."""

    def __init__(self, model: Transformer, rows: Sequence[_Row], limit: TreeConfig) -> None:
        self.model = model
        layout = (
            model.layout if limit.top_k > 1 else replace(model.layout, max_columns=1)
        )  # a chain: one column
        room = tree_room(limit.budget, layout)
        longest = max(len(r.prompt) + r.params.max_new_tokens for r in rows)
        self.batch = model.new_cache(longest + room, batch=len(rows))
        self.caches = self.batch.rows()  # row r's cache is batch row r (``keep`` re-packs)
        self.slots: list[torch.Tensor] = []
        self.rows_pass = Int4Rows(model)

    @staticmethod
    def fits(model: Transformer) -> bool:
        return Int4Rows.supports(model)

    @property
    def length(self) -> int:
        return max(cache.length for cache in self.caches)

    def prefill(self, rows: Sequence[_Row]) -> tuple[torch.Tensor, list[torch.Tensor]]:
        outs = [
            prefill(self.model, row.prompt, cache, taps=True)
            for row, cache in zip(rows, self.caches)
        ]
        return torch.stack([out.logits[0, -1] for out in outs]), [out.taps[0] for out in outs]

    def verify(self, rows: Sequence[_Row], trees: Sequence[DraftTree]):
        layout = self.model.layout
        trees = [fit_lanes(tree, cache.length, layout) for tree, cache in zip(trees, self.caches)]
        parts, self.slots = [], []
        for row, tree, cache in zip(rows, trees, self.caches):
            tokens, positions, mask, slots = verify_inputs(cache, row.root, tree, layout)
            parts.append(
                RowPass(tokens[0], cache, positions, mask, slots if layout.lanes else None)
            )
            self.slots.append(slots)
        outs = self.rows_pass.run_rows(parts, taps=True, batch=self.batch)
        return trees, [logits for logits, _ in outs], [taps for _, taps in outs]

    def commit(self, rows: Sequence[_Row], results) -> None:
        for cache, slots, result in zip(self.caches, self.slots, results):
            cache.compact(slots[result.kept_rows])

    def keep(self, live: Sequence[int]) -> None:
        index = torch.tensor(list(live), dtype=torch.long, device=self.batch.k.device)
        lengths = [self.caches[r].length for r in live]
        self.batch.k, self.batch.v = self.batch.k[:, index], self.batch.v[:, index]
        self.caches = self.batch.rows()
        for cache, length in zip(self.caches, lengths):
            cache.length = length


# ---- the loop ------------------------------------------------------------------------------------
def _draft_layout(drafter: Drafter, rows: Sequence[_Row], limit: TreeConfig) -> BatchLayout:
    """The drafter's cache, sized for the prompts, the answers and one round's tree of shape
    ``limit`` (its draft slots or a catch-up, whichever is larger, plus its nodes + 1 more: a
    deferred catch-up lands at the longest row's end with another row's queue, which can be one
    round's acceptance longer)."""
    max_nodes, draft_slots = limit.budget, limit.max_depth * limit.top_k
    width = max(len(r.prompt) for r in rows)
    budget = max(r.params.max_new_tokens for r in rows)
    return BatchLayout(
        drafter.new_cache(
            width + budget + max(draft_slots, max_nodes + 2) + max_nodes + 1, batch=len(rows)
        ),
        len(rows),
    )


@torch.inference_mode()
def decode_speculative_batch(
    model: Transformer,
    drafter: Drafter | None,
    prompts: Sequence[Sequence[int]],
    params: Sequence[SamplingParams],
    stops: Sequence[StopChecker],
    stats: Sequence[DecodeStats] | None = None,
    planner: Planner | None = None,
) -> Iterator[tuple[int, list[int]]]:
    """Yield (sequence index, accepted tokens) as rounds finish; each sequence's output equals its
    ``decode_speculative`` / ``decode_autoregressive`` output (greedy: exactly, in fp32 and with
    ``RowTargets``; see the module docstring).

    ``planner`` gives each round's tree shape (default ``FixedTree()``). ``drafter=None`` with a
    planner of budget 0 (``FixedTree(TreeConfig(budget=0))``) is batched plain decoding."""
    if not (len(prompts) == len(params) == len(stops)) or not prompts:
        raise ValueError("need one or more prompts, with one SamplingParams and StopChecker each")
    planner = planner if planner is not None else FixedTree()
    limit = planner.batch_limit()
    if drafter is None and limit.budget:
        raise ValueError(
            "without a drafter only plain batched decoding (a budget-0 FixedTree) is possible"
        )
    if any(not p for p in prompts):
        raise ValueError("every prompt needs at least one token")
    stats = list(stats) if stats is not None else [DecodeStats() for _ in prompts]
    if len(stats) != len(prompts):
        raise ValueError(f"got {len(stats)} DecodeStats for {len(prompts)} prompts")
    rows = [
        _Row(i, list(p), sp, st, s, make_generator(sp.seed))
        for i, (p, sp, st, s) in enumerate(zip(prompts, params, stops, stats))
    ]
    for row in rows:
        row.stats.prompt_tokens = len(row.prompt)
    rows = [r for r in rows if not r.stop.done]
    if not rows:
        return
    started = time.perf_counter()
    target = (RowTargets if RowTargets.fits(model) else SharedTarget)(model, rows, limit)
    draft = None if drafter is None else _draft_layout(drafter, rows, limit)
    logits, prompt_taps = target.prefill(rows)
    for r, row in enumerate(rows):
        row.root = pick_token(logits[r], row.stop.tokens, row.params, row.generator)
        row.length = len(row.prompt)
        row.stats.prefill_s = time.perf_counter() - started
    live = []
    for r, row in enumerate(rows):
        emitted = commit_tokens([row.root], row.stop, row.stats)
        if emitted:
            yield row.index, emitted
        if not row.stop.done:
            live.append(r)
    feeds_drafter = (
        draft is not None and limit.budget > 0
    )  # a planner that never drafts: nothing to queue
    if feeds_drafter:  # the drafter's entries: target feature at position i + token i+1
        for r, row in enumerate(rows):
            defer_catch_up(row, prompt_taps[r], row.prompt[1:] + [row.root], 0)
    rows = _keep(rows, live, target, draft)
    decode_started = time.perf_counter()
    while rows:
        tree_config = planner.batch_config(target.length, len(rows))
        t0 = time.perf_counter()
        if tree_config.budget:
            flush_catch_up(drafter, draft, rows, tree_config)
        trees = draft_trees(drafter, draft, rows, tree_config)
        t1 = time.perf_counter()
        trees, logits, taps = target.verify(rows, trees)
        results = [
            verify(tree, logits[r][: tree.size + 1], row.stop.tokens, row.params, row.generator)
            for r, (row, tree) in enumerate(zip(rows, trees))
        ]
        t2 = time.perf_counter()
        planner.observe_batch(
            tree_config, trees, results, t1 - t0, t2 - t1, [row.stats for row in rows]
        )
        live = []
        for r, (row, tree, result) in enumerate(zip(rows, trees, results)):
            s = row.stats
            s.draft_s, s.verify_s, s.target_forwards = (
                s.draft_s + t1 - t0,
                s.verify_s + t2 - t1,
                s.target_forwards + 1,
            )
            s.record_round(result.num_accepted, tree.max_depth)
            emitted = commit_tokens(result.tokens, row.stop, s)
            if emitted:
                yield row.index, emitted
            if row.stop.done:
                s.decode_s = time.perf_counter() - decode_started
            else:
                live.append(r)
        target.commit(rows, results)
        for r, (row, result) in enumerate(zip(rows, results)):
            if feeds_drafter:
                defer_catch_up(row, taps[r][result.kept_rows], result.tokens, row.length)
            row.length += len(result.tokens)
            row.root = result.tokens[-1]
        rows = _keep(rows, live, target, draft)


def _keep(
    rows: list[_Row], live: list[int], target: SharedTarget | RowTargets, draft: BatchLayout | None
) -> list[_Row]:
    if len(live) == len(rows):
        return rows
    if live:
        target.keep(live)
        if draft is not None:
            draft.keep(live)
    return [rows[r] for r in live]
