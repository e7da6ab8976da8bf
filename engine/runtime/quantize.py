"""Optional int8 weights for CPU decoding (dtype "int8").

Replaces the target's linear layers (attention, MLP, head) with PyTorch's
dynamically quantized int8 linears (per-channel int8 weights, activations
quantized on the fly by fbgemm). On a memory-bound CPU this reads a quarter
of the fp32 bytes per token.

The activation scale is computed per call over all rows, so a row's result
depends on the other rows in the same pass: int8 is for plain decoding, not
for lossless speculative verification (``Generator`` refuses that mix).
Not here: any choice of when to use it (``engine.runtime.device`` / the caller).
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

QUANTIZED_LAYERS = ("qkv_proj", "o_proj", "gate_up_proj", "down_proj", "lm_head")


def int8_available() -> bool:
    return (
        "fbgemm" in torch.backends.quantized.supported_engines
        or "x86" in torch.backends.quantized.supported_engines
    )


def _int8_linear(linear: nn.Linear) -> nn.Module:
    from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear
    from torch.ao.quantization import per_channel_dynamic_qconfig

    source = nn.Linear(linear.in_features, linear.out_features, bias=linear.bias is not None)
    source.weight = nn.Parameter(linear.weight.detach().float().clone(), requires_grad=False)
    if linear.bias is not None:
        source.bias = nn.Parameter(linear.bias.detach().float().clone(), requires_grad=False)
    source.qconfig = per_channel_dynamic_qconfig
    return DynamicLinear.from_float(source)


def quantize_int8(model: nn.Module) -> nn.Module:
    """Swap the named linear layers of ``model`` (float32) for int8 dynamic ones, in place."""
    if not int8_available():
        raise RuntimeError("this PyTorch build has no int8 CPU kernels (fbgemm/x86)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao deprecation notices
        for parent in list(model.modules()):
            for name, child in list(parent.named_children()):
                if name in QUANTIZED_LAYERS and isinstance(child, nn.Linear):
                    setattr(parent, name, _int8_linear(child))
    return model
