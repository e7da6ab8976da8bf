"""The target as it runs: ``build_runner`` decides, once at load, which code every pass takes.

One function makes every runtime choice for a loaded model, by swapping modules and
classes (never by flags read per pass), from three things:
- the precision: the model's own dtype (float32, bfloat16, float16), int4 (packed when
  the weights load, ``engine.weights.loading.load_int4``), or one of the plain-only
  precisions swapped in here: int8 (``engine.runtime.quantize``) and mixed
  (``engine.runtime.mixed_precision``);
- exactness: whether a row of a pass computes what its single-token step computes,
  which lossless speculation needs. Float models are exact (half precision on a CPU
  made so by ``engine.runtime.exact_rows``: padded linears, row-by-row attention, a
  lane layout for draft trees); int4 is where this CPU's kernels
  compute rows independently (``engine.runtime.int4.rows_are_independent``); int8 and
  mixed never are (they decode plainly);
- the device: on CUDA in half precision, FlashInfer's tree attention where it agrees
  with SDPA (``engine.runtime.tree_attention``) and CUDA graphs with their own static
  cache (``engine.runtime.cuda_graphs``).
``Runner.kernels()`` names what was chosen (the benchmark records it).

Not here: reading weights or choosing a precision from a device (``engine.generator``,
``engine.runtime.device``), decoding.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .cuda_graphs import attach_cuda_graphs, cuda_graphs_of, graphs_wanted
from .device import INT4, INT8, MIXED, PLAIN_ONLY
from .exact_rows import make_rows_exact
from .layout import TreeLayout
from .model import Transformer
from .tree_attention import use_flashinfer


@dataclass(frozen=True)
class Runner:
    """A model built for one (device, precision, exactness); see the module docstring."""

    model: Transformer
    exact: bool  # a row's numbers never depend on its pass: speculation and batches are lossless

    @property
    def precision(self) -> str:
        return self.model.precision

    @property
    def layout(self) -> TreeLayout:
        return self.model.layout

    def kernels(self) -> dict[str, object]:
        return describe(self.model) | {"exact": self.exact}


def build_runner(
    model: Transformer, precision: str | None = None, *, cuda_graphs: bool | None = None
) -> Runner:
    """``model`` (loaded in its own dtype, or int4) made the runner for ``precision`` (None: the
    model's own; "int8" or "mixed": a float32 model's linear layers swapped here), in place.
    ``cuda_graphs``: None follows ``$PROMPTX_CUDA_GRAPHS`` (on unless "0"); CUDA only."""
    if precision in PLAIN_ONLY:
        _use_plain_only(model, precision)
    elif precision not in (None, model.precision):
        raise ValueError(f"a {model.precision} model cannot run as {precision}")
    exact = _rows_exact(model)
    if exact:
        make_rows_exact(model)
    use_flashinfer(model)
    if cuda_graphs_of(model) is None and (graphs_wanted() if cuda_graphs is None else cuda_graphs):
        attach_cuda_graphs(model)
    return Runner(model, exact)


def _use_plain_only(model: Transformer, precision: str) -> None:
    from .mixed_precision import use_mixed_precision
    from .quantize import quantize_int8

    if model.precision != "float32":
        raise ValueError(f"{precision} needs a float32 model, got {model.precision}")
    if precision == INT8:
        quantize_int8(model)
    else:
        use_mixed_precision(model)
    model.precision = precision


def _rows_exact(model: Transformer) -> bool:
    """Whether a row of ``model``'s passes computes what it computes alone (module docstring)."""
    if model.precision in (INT8, MIXED):
        return False
    if model.precision == INT4:
        from .int4 import rows_are_independent

        return rows_are_independent(torch.get_num_threads())
    return True


def describe(model: Transformer) -> dict[str, object]:
    """Which classes run ``model``'s passes: the pass (the modules or a lean/graphed pass),
    linear layers, attention, and the draft-tree layout."""
    block = model.layers[0]
    linears = sorted(
        {type(m).__name__ for m in (block.self_attn.qkv_proj, block.mlp.down_proj, model.lm_head)}
    )
    lean = getattr(model, "lean", None)
    graphs = cuda_graphs_of(model)
    return {
        "device": str(model.embed_tokens.weight.device),
        "precision": model.precision,
        "pass": type(lean).__name__ if lean is not None else type(model).__name__,
        "linear": "+".join(linears),
        "attention": type(block.self_attn).__name__,
        "lane_stride": model.layout.lane_stride,
        "max_columns": model.layout.max_columns,
        "cuda_graphs": graphs is not None,
    }
