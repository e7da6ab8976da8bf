"""What the benchmark records about the machine: CPU, threads, precision, kernels, CUDA graphs,
memory.

Not here: measuring decoding (``engine.bench.runs``).
"""

from __future__ import annotations

import os
import platform
import resource

import torch

from ..planning.cost_table import cpu_name
from ..runtime.cuda_graphs import cuda_graphs_of
from ..runtime.runner import describe


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far (ru_maxrss: KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 20) if platform.system() == "Darwin" else peak / 1024


def machine_info(model) -> dict:
    from ..runtime.device import cpu_has_fast_bf16

    device = model.embed_tokens.weight.device  # (int8 heads have no weight tensor)
    info = {
        "cpu_model": cpu_name(),
        "cpu_count": os.cpu_count(),
        "torch_version": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "dtype": model.precision,
        "device": str(device),
        "fast_bf16": cpu_has_fast_bf16(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    # CUDA graphs (engine.runtime.cuda_graphs): capture cost, captured buckets, replays; None when
    # off
    graphs = cuda_graphs_of(model)
    info["cuda_graphs"] = graphs.summary() if graphs is not None else None
    kernels = {
        getattr(layer.self_attn, "kernel", None) for layer in model.layers
    }  # KernelAttention's
    info["attention"] = (
        "sdpa" if kernels == {None} else "flashinfer"
    )  # engine.runtime.tree_attention
    info["kernels"] = describe(model)  # the classes every pass runs (engine.runtime.runner)
    return info
