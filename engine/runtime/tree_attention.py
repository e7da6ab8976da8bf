"""Tree attention through FlashInfer, where it is installed (the ``promptx[gpu]`` extra).

FlashInfer's single-sequence prefill kernel takes a boolean mask over the
keys (``custom_mask``), so a draft tree's verification pass, and the
single-token step with every key visible, run in one kernel over the KV
cache as it lies (heads, slots, dims: FlashInfer's "HND" layout), grouped KV
heads included. ``use_flashinfer`` gives a CUDA target in half precision this
kernel for every batch-1 pass after the prompt (``engine.runtime.model.KernelAttention``), once a
probe has run it and found it agreeing with SDPA; without FlashInfer, on a
CPU, in fp32 (FlashInfer has no fp32 kernels) or when the probe fails, every
pass keeps SDPA with the boolean mask (``layers.attend``). The two agree to
rounding, not bit for bit.

Not here: the masks themselves (``engine.speculative.loop.verify_inputs``,
``engine.runtime.cuda_graphs.pad_pass``), the prompt's causal prefill (SDPA).
"""

from __future__ import annotations

import functools
import importlib.util

import torch

from .layers import attend
from .model import use_attention_kernel

HALF = (torch.float16, torch.bfloat16)
PROBE_TOLERANCE = 2e-2  # bf16 outputs of two kernels summing in different orders


def flashinfer_installed() -> bool:
    return importlib.util.find_spec("flashinfer") is not None


def flashinfer_attend(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """``layers.attend`` for one sequence: q [1, H, T, D]; k, v [1, Hkv, S, D]; mask bool [T, S]
    (True = attend) -> [1, H, T, D]."""
    import flashinfer

    out = flashinfer.single_prefill_with_kv_cache(
        q[0].transpose(0, 1).contiguous(),
        k[0],
        v[0],
        custom_mask=mask.contiguous(),
        kv_layout="HND",
    )
    return out.transpose(0, 1)[None]


@functools.lru_cache(maxsize=None)
def flashinfer_agrees(
    dtype: torch.dtype, heads: int, kv_heads: int, head_dim: int, device: str
) -> bool:
    """Whether FlashInfer runs here and matches SDPA on a tree mask over a strided cache view
    (random inputs, once per shape; any error, a JIT build that fails included, means no)."""
    if not flashinfer_installed():
        return False
    gen = torch.Generator(device=device).manual_seed(0)
    t, keys, storage = 9, 200, 256
    q = torch.randn(1, heads, t, head_dim, generator=gen, device=device).to(dtype)
    kv = torch.randn(2, 1, kv_heads, storage, head_dim, generator=gen, device=device).to(dtype)
    k, v = (
        kv[0, :, :, :keys],
        kv[1, :, :, :keys],
    )  # a view over a longer cache, as the model reads it
    mask = torch.rand(t, keys, generator=gen, device=device) < 0.7
    mask[:, 0] = True  # every row sees at least one key
    try:
        got = flashinfer_attend(q, k, v, mask)
    except Exception:  # noqa: BLE001 - not importable, no kernel for this shape, JIT failed, ...
        return False
    want = attend(q, k, v, mask, causal=False)
    return bool(
        torch.allclose(got.float(), want.float(), atol=PROBE_TOLERANCE, rtol=PROBE_TOLERANCE)
    )


def use_flashinfer(model) -> bool:
    """Give every attention layer of a batch-1 CUDA target in half precision the FlashInfer kernel
    for its passes after the prompt, if ``flashinfer_agrees``; True when it did."""
    cfg, device = model.config, model.embed_tokens.weight.device
    if device.type != "cuda" or model.dtype not in HALF:
        return False
    if not flashinfer_agrees(
        model.dtype, cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim, str(device)
    ):
        return False
    use_attention_kernel(model, flashinfer_attend)
    return True
