"""CUDA graphs of the target's passes after the prompt at batch 1, over one static KV cache.

On a GPU a small model is bound by kernel launches (~30 layers x ~15 kernels
a token), so the passes a decode repeats are captured once and replayed: the
single-token step (1 row) and verification passes of root + tree in buckets
of ``NODE_BUCKETS`` tree nodes (a tree of n nodes runs in the graph of the
smallest bucket >= n, padded by ``pad_pass``; more than 64 nodes: no graph).
A graph reads fixed addresses, so every graph works on one static cache that
``GraphedTransformer.new_cache`` leases to one batch-1 decode at a time
(``CudaGraphs.lease``), and on static input buffers: token ids, positions,
cache slots and the attention mask are device tensors written before each
replay with device operations only (no host synchronisation in a step; the
caller still reads the logits it needs). Each graph attends over the whole
static cache with a boolean mask [rows, keys]: the real rows see what the
module path lets them see (the prefix, their tree ancestors, themselves),
padding rows only their own slot (past the real ones), so padding never
changes what a real row computes.

Exactness expected (the CUDA tests check it; no GPU has run them yet): a
replay equals the same padded pass run eagerly (``capture=False``) bit for
bit (the same kernels on the same shapes), and what padding rows hold never
changes a real row (tested on the CPU). Against the module path (keys up to
the last written slot, T rows) it differs only in rounding (another key
length and row count may choose other kernels or split sums differently): in
fp32 greedy tokens are equal; in bf16 a near-tie may flip, as between any two
GPU kernels (the bench's ``lossless`` column shows it). Eager fallback: off
CUDA ``attach_cuda_graphs`` attaches nothing (every pass as before); a bucket
whose capture fails runs the same padded pass eagerly; a pass no bucket holds,
or any other pass (the prompt, batches, caches not leased), goes through the
modules.

Not here: the drafter's passes (not captured), the decode loops (unchanged:
they reach the graphs through ``GraphedTransformer.forward``), tree masks of the
module path (``engine.speculative.loop.verify_inputs``).
"""

from __future__ import annotations

import os
import time
import weakref
from collections import Counter
from dataclasses import dataclass

import torch

from .kv_cache import KVCache, aligned
from .model import ForwardOutput, Transformer

NODE_BUCKETS = (1, 4, 8, 16, 32, 64)  # tree nodes per captured verification pass (root not counted)
GRAPH_ROWS = (1,) + tuple(
    n + 1 for n in NODE_BUCKETS
)  # rows per graph: the step, then root + bucket
DEFAULT_CAPACITY = (
    2048  # slots a leased decode may use (prompt + new tokens + tree); longer decodes: modules
)
WARMUP_RUNS = (
    2  # eager runs of a pass on a side stream before its capture (kernel choice, workspaces)
)
ENV = "PROMPTX_CUDA_GRAPHS"  # "0", "off", "false" or "no": do not capture (``graphs_wanted``)


def graphs_wanted() -> bool:
    """Whether CUDA graphs are on by default (the ``PROMPTX_CUDA_GRAPHS`` variable; unset: on)."""
    return os.environ.get(ENV, "").strip().lower() not in ("0", "off", "false", "no")


def graph_rows(rows: int) -> int | None:
    """Rows of the graph that runs a pass of ``rows`` rows (root + tree nodes): 1 for one row,
    else 1 + the smallest ``NODE_BUCKETS`` entry >= rows - 1; None when no bucket holds it."""
    if rows < 1:
        raise ValueError(f"a pass has at least one row, not {rows}")
    if rows == 1:
        return 1
    return next((n + 1 for n in NODE_BUCKETS if rows - 1 <= n), None)


@dataclass
class PassInputs:
    """Static inputs of a pass of ``rows`` rows over ``keys`` cache slots (device tensors)."""

    tokens: torch.Tensor  # [1, R] long
    positions: torch.Tensor  # [R] long: rope positions
    slots: torch.Tensor  # [R] long: cache slots written
    mask: torch.Tensor  # [R, keys] bool, True = may attend
    index: torch.Tensor  # [R] long: 0..R-1 (constant)
    tril: torch.Tensor  # [R, R] bool: causal mask of new rows (constant)
    true: torch.Tensor  # [R] bool: all True (constant, the value padding rows set)

    @classmethod
    def empty(cls, rows: int, keys: int, device: torch.device | str) -> "PassInputs":
        """Inputs of an empty cache: token 0 at position 0 in slots 0..R-1, each row seeing its own
        slot."""
        index = torch.arange(rows, device=device)
        mask = torch.zeros(rows, keys, dtype=torch.bool, device=device)
        mask[index, index] = True
        return cls(
            tokens=torch.zeros(1, rows, dtype=torch.long, device=device),
            positions=torch.zeros(rows, dtype=torch.long, device=device),
            slots=index.clone(),
            mask=mask,
            index=index,
            tril=torch.ones(rows, rows, dtype=torch.bool, device=device).tril(),
            true=torch.ones(rows, dtype=torch.bool, device=device),
        )

    @property
    def rows(self) -> int:
        return self.tokens.shape[1]

    @property
    def keys(self) -> int:
        return self.mask.shape[1]


def pad_pass(
    tokens: torch.Tensor,
    positions: torch.Tensor | None,
    mask: torch.Tensor | None,
    start: int,
    out: PassInputs,
) -> PassInputs:
    """Write a pass of T rows at slots ``start``.. into ``out``'s R >= T rows and return ``out``.

    tokens [1, T]; positions [T] (None: the slot numbers); mask bool [T, W] with W <= start + T
    (None: the prefix and the new rows up to each, as ``Transformer.forward`` does). Real rows
    keep their tokens, positions and mask (False from W on); padding rows get token 0 at
    position ``start``, the slots right after the real ones, and see only their own slot. Device
    operations only: no host synchronisation."""
    t, r = tokens.shape[1], out.rows
    if not 1 <= t <= r:
        raise ValueError(f"a pass of {t} rows does not fit {r} rows")
    out.tokens.zero_()
    out.tokens[:, :t].copy_(tokens)
    torch.add(out.index, start, out=out.slots)
    out.positions.fill_(start)
    if positions is None:
        out.positions[:t].copy_(out.slots[:t])
    else:
        out.positions[:t].copy_(positions)
    out.mask.zero_()
    if mask is None:
        out.mask[:t, :start].fill_(True)
        out.mask[:t, start : start + t].copy_(out.tril[:t, :t])
    elif mask.shape[-1] > start + t:
        raise ValueError(
            f"mask spans {mask.shape[-1]} keys; a pass of {t} rows at {start} ends at {start + t}"
        )
    else:
        out.mask[:t, : mask.shape[-1]].copy_(mask)
    if t < r:
        out.mask.index_put_((out.index[t:], out.slots[t:]), out.true[t:])
    return out


class _StaticKV:
    """What ``Transformer.forward`` sees of the static cache inside a graph: ``write`` stores at
    the slots given (device tensor, no bound check on the host) and returns every slot; the
    nonzero ``length`` makes attention take the mask as given (never the prompt's causal path)."""

    length = 1

    def __init__(self, storage: KVCache) -> None:
        self.k, self.v = storage.k, storage.v

    def write(
        self, layer: int, start: int, k: torch.Tensor, v: torch.Tensor, span=None, slots=None
    ):
        self.k[layer].index_copy_(2, slots, k)
        self.v[layer].index_copy_(2, slots, v)
        return self.k[layer], self.v[layer]


class CudaGraphs:
    """The graphs of one batch-1 target over its static cache (``GraphedTransformer.graphs``).

    ``capture=False`` (or a capture that fails) runs each padded pass eagerly: the same
    numbers without a graph, which is how CPU tests check the padding and the masks."""

    def __init__(
        self,
        model: Transformer,
        capacity: int = DEFAULT_CAPACITY,
        rows=GRAPH_ROWS,
        *,
        capture: bool = True,
    ) -> None:
        cfg = model.config
        self.model = model
        self.capacity = min(capacity, cfg.max_position_embeddings)
        device = model.embed_tokens.weight.device
        # room for a bucket's padding rows past the last slot a decode may use; aligned: the mask
        # rows of the attention kernels stay 16-byte aligned
        self.storage = KVCache(
            cfg.num_hidden_layers,
            1,
            cfg.num_key_value_heads,
            cfg.head_dim,
            aligned(self.capacity + max(rows)),
            model.dtype,
            device,
        )
        self.static = _StaticKV(self.storage)
        self.inputs = {r: PassInputs.empty(r, self.storage.capacity, device) for r in sorted(rows)}
        self.graphs: dict[int, torch.cuda.CUDAGraph] = {}
        self.outputs: dict[int, ForwardOutput] = {}
        self.failed: dict[int, str] = {}
        self.replays: Counter = Counter()  # rows -> passes replayed
        self.eager: Counter = Counter()  # rows -> padded passes run eagerly (no graph)
        self.module_passes = 0  # passes on a leased cache left to the modules (the prompt, ...)
        self._leased = None
        started = time.perf_counter()
        if capture:
            for r in sorted(rows, reverse=True):
                self._try_capture(r)
        self.capture_s = time.perf_counter() - started

    # ---- the cache -------------------------------------------------------------------------------
    def lease(self, capacity: int) -> KVCache | None:
        """The static cache for one decode of up to ``capacity`` slots (length 0, that capacity),
        or None when it does not fit or the cache leased last is still alive (an ordinary cache
        then serves the caller, through the modules)."""
        if capacity > self.capacity or (self._leased is not None and self._leased() is not None):
            return None
        cache = KVCache.__new__(KVCache)
        cache.k, cache.v, cache.capacity, cache.length = self.storage.k, self.storage.v, capacity, 0
        self._leased = weakref.ref(cache)
        return cache

    def _is_leased(self, cache) -> bool:
        return (
            self._leased is not None
            and cache is self._leased()
            and cache.k is self.storage.k
            and cache.v is self.storage.v
        )

    # ---- the passes ------------------------------------------------------------------------------
    def handles(
        self, tokens: torch.Tensor, cache, *, positions=None, mask=None, slots=None, **_
    ) -> bool:
        """A pass after the prompt on the leased cache at contiguous slots, with a bucket for its
        rows, positions [T] and a bool mask [T, W <= length + T] (or the defaults)."""
        if not self._is_leased(cache):
            return False
        t, start = tokens.shape[1], cache.length
        fits = (
            tokens.shape[0] == 1
            and start > 0
            and slots is None
            and start + t <= cache.capacity
            and graph_rows(t) in self.inputs
            and (positions is None or tuple(positions.shape) == (t,))
            and (
                mask is None
                or (
                    mask.dtype == torch.bool
                    and mask.dim() == 2
                    and mask.shape[0] == t
                    and mask.shape[1] <= start + t
                )
            )
        )
        if not fits:
            self.module_passes += 1
        return fits

    def __call__(
        self,
        tokens: torch.Tensor,
        cache,
        *,
        positions=None,
        mask=None,
        logits_at=None,
        taps=False,
        **_,
    ) -> ForwardOutput:
        """``Transformer.forward`` of a pass ``handles`` takes (the cache is not committed)."""
        t = tokens.shape[1]
        rows = graph_rows(t)
        pad_pass(tokens, positions, mask, cache.length, self.inputs[rows])
        if rows in self.graphs:
            self.graphs[rows].replay()
            self.replays[rows] += 1
            out = self.outputs[rows]
        else:
            out = self.run_eager(rows)
            self.eager[rows] += 1
        logits = out.logits[:, :t] if logits_at is None else out.logits[:, :t][:, logits_at]
        # copies: the next replay overwrites a graph's outputs
        return ForwardOutput(
            logits=logits.clone() if logits.shape[1] else None,
            taps=out.taps[:, :t].clone() if taps else None,
        )

    def run_eager(self, rows: int) -> ForwardOutput:
        """The padded pass of ``rows`` rows on the current static inputs, through the modules."""
        inputs = self.inputs[rows]
        return Transformer.forward(
            self.model,
            inputs.tokens,
            self.static,
            positions=inputs.positions,
            mask=inputs.mask,
            taps=True,
            slots=inputs.slots,
        )

    def _try_capture(self, rows: int) -> None:
        try:
            self.graphs[rows], self.outputs[rows] = self._capture(rows)
        except Exception as exc:  # noqa: BLE001 - any failure means: run this bucket eagerly
            self.graphs.pop(rows, None)
            self.failed[rows] = f"{type(exc).__name__}: {exc}"[:300]

    @torch.inference_mode()
    def _capture(self, rows: int) -> tuple["torch.cuda.CUDAGraph", ForwardOutput]:
        if self.storage.k.device.type != "cuda":  # a graph of CPU work records nothing to replay
            raise RuntimeError(
                f"CUDA graphs capture CUDA work; the model is on {self.storage.k.device}"
            )
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(WARMUP_RUNS):
                self.run_eager(rows)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = self.run_eager(rows)
        torch.cuda.synchronize()
        return graph, out

    def summary(self) -> dict:
        """What the bench reports: capacity, the captured rows, failures, capture time and use."""
        return {
            "capacity": self.capacity,
            "captured_rows": sorted(self.graphs),
            "failed": {str(r): why for r, why in sorted(self.failed.items())},
            "capture_s": round(self.capture_s, 3),
            "replays": {str(r): n for r, n in sorted(self.replays.items())},
            "eager_padded_passes": {str(r): n for r, n in sorted(self.eager.items())},
            "module_passes": self.module_passes,
        }


class GraphedTransformer(Transformer):
    """A ``Transformer`` whose batch-1 passes after the prompt replay ``graphs`` on the static
    cache ``new_cache`` leases; every other pass (and cache) goes through the modules."""

    graphs: CudaGraphs

    def new_cache(self, capacity: int | None = None, batch: int = 1) -> KVCache:
        capacity = capacity or self.config.max_position_embeddings
        leased = self.graphs.lease(capacity) if batch == 1 else None
        return leased if leased is not None else super().new_cache(capacity, batch)

    @torch.inference_mode()
    def forward(self, tokens: torch.Tensor, cache: KVCache, **options) -> ForwardOutput:
        if self.graphs.handles(tokens, cache, **options):
            return self.graphs(tokens, cache, **options)
        return super().forward(tokens, cache, **options)


def use_cuda_graphs(model: Transformer, graphs: CudaGraphs) -> None:
    """``model`` a ``GraphedTransformer`` replaying ``graphs``, in place."""
    model.__class__ = GraphedTransformer
    model.graphs = graphs


def cuda_graphs_of(model: Transformer) -> CudaGraphs | None:
    """The graphs ``model`` replays, if any."""
    return model.graphs if isinstance(model, GraphedTransformer) else None


def attach_cuda_graphs(model: Transformer, capacity: int = DEFAULT_CAPACITY) -> CudaGraphs | None:
    """Capture ``model``'s graphs and route its batch-1 passes through them (``use_cuda_graphs``);
    None, and nothing changes, off CUDA, for a precision without its own torch dtype (int4, int8,
    mixed: CPU precisions) or where graphs are attached."""
    device = model.embed_tokens.weight.device
    if (
        device.type != "cuda"
        or type(model) is not Transformer
        or model.precision != str(model.dtype).removeprefix("torch.")
    ):
        return None
    graphs = CudaGraphs(model, capacity)
    use_cuda_graphs(model, graphs)
    return graphs
