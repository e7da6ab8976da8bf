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


DTYPES = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
}


INT8 = "int8"  # float32 activations, dynamically quantized int8 linears (engine.runtime.quantize)
MIXED = (
    "mixed"  # float32 multi-token passes, bf16 single-token steps (engine.runtime.mixed_precision)
)
PLAIN_ONLY = (INT8, MIXED)  # precisions that decode plainly only (no lossless speculation)
INT4 = "int4"  # bf16 activations, 4-bit weights (engine.runtime.int4); lossless speculation kept


AUTO = (
    "auto"  # int4 where it is faster and changes no weight (``prefers_int4``), else default_dtype
)


def prefers_int4(device: torch.device | str) -> bool:
    """Whether "auto" tries 4-bit weights here: a CPU with native bf16 (where int4 was measured;
    elsewhere ``--dtype int4`` is there to try) whose int4 kernels beat bf16 in a quick probe."""
    from .int4 import int4_available, int4_is_faster

    return (
        torch.device(device).type == "cpu"
        and cpu_has_fast_bf16()
        and int4_available()
        and int4_is_faster(torch.get_num_threads())
    )


def fastest_dtype(device: torch.device | str) -> torch.dtype | str:
    """The quickest precision for plain decoding: "mixed" on CPUs without native bf16
    (single-token steps twice as fast as fp32, prefill still fp32), else "auto"."""
    device = torch.device(device)
    if device.type == "cpu" and not cpu_has_fast_bf16():
        return MIXED
    return AUTO


def parse_dtype(name: str | torch.dtype | None, device: torch.device | str) -> torch.dtype | str:
    """A torch dtype, or one of the strings in PLAIN_ONLY, or INT4. "auto" is ``default_dtype``
    (``Generator.from_dir`` tries int4 first where ``prefers_int4``)."""
    if isinstance(name, str) and name.lower() in PLAIN_ONLY + (INT4,):
        return name.lower()
    if name is None or name == "auto":
        return default_dtype(device)
    if isinstance(name, torch.dtype):
        return name
    try:
        return DTYPES[name.lower()]
    except KeyError:
        raise ValueError(
            f"unknown dtype {name!r}; use one of {', '.join(DTYPES)}, int4, int8, mixed or auto"
        ) from None
