"""Device and dtype choices: bf16 where the hardware runs it fast, fp32 otherwise.

Not here: any model code.
"""

from __future__ import annotations

import functools

import torch


@functools.lru_cache(maxsize=None)
def cpu_has_fast_bf16() -> bool:
    """True when the CPU has native bf16 dot products (AVX512-BF16 or AMX)."""
    try:
        flags = open("/proc/cpuinfo").read()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def default_device() -> torch.device:
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


def default_dtype(device: torch.device | str) -> torch.dtype:
    device = torch.device(device)
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.bfloat16 if cpu_has_fast_bf16() else torch.float32


DTYPES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
          "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16}


INT8 = "int8"   # float32 activations, dynamically quantized int8 linears (engine.runtime.quantize)
MIXED = "mixed"  # float32 multi-token passes, bf16 single-token steps (engine.runtime.mixed_precision)
PLAIN_ONLY = (INT8, MIXED)   # precisions that decode plainly only (no lossless speculation)


def fastest_dtype(device: torch.device | str) -> torch.dtype | str:
    """The quickest precision for plain decoding: "mixed" on CPUs without native bf16
    (single-token steps twice as fast as fp32, prefill still fp32), else ``default_dtype``."""
    device = torch.device(device)
    if device.type == "cpu" and not cpu_has_fast_bf16():
        return MIXED
    return default_dtype(device)


def parse_dtype(name: str | torch.dtype | None, device: torch.device | str) -> torch.dtype | str:
    """A torch dtype, or one of the strings in PLAIN_ONLY. "auto" is ``default_dtype``."""
    if isinstance(name, str) and name.lower() in PLAIN_ONLY:
        return name.lower()
    if name is None or name == "auto":
        return default_dtype(device)
    if isinstance(name, torch.dtype):
        return name
    try:
        return DTYPES[name.lower()]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r}; use one of {', '.join(DTYPES)}, int8, mixed or auto") from None
