"""Mixed precision for CPUs without native bf16 (dtype "mixed").

On such CPUs a bf16 matrix-vector product (one token) reads half the bytes of
fp32 and runs about twice as fast, while bf16 matrix-matrix products (prompt
prefill, tree verification) are emulated and several times slower than fp32.
``use_mixed_precision`` swaps the target's linear layers for ones that keep
both copies: fp32 for passes over several tokens, bf16 for single-token steps.

A row's numerics then depend on how many rows share its pass, so tree
verification would not reproduce plain decoding: like int8, mixed precision
is for plain decoding only (``Generator`` turns speculation off).
Not here: the choice of when to use it (``engine.runtime.device``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .mixed_step import LeanStep, use_lean_pass
from .quantize import QUANTIZED_LAYERS
from .registered import buffer, parameter


class MixedLinear(nn.Module):
    """A linear layer with an fp32 weight and a bf16 copy used when the pass holds one row."""

    weight, bias, step_weight = parameter(), parameter(), buffer()

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight = linear.weight  # kept as is: may be tied to the embeddings
        self.bias = linear.bias
        self.register_buffer(
            "step_weight", linear.weight.detach().to(torch.bfloat16), persistent=False
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.numel() != x.shape[-1]:
            return F.linear(x, self.weight, self.bias)
        out = F.linear(x.to(torch.bfloat16), self.step_weight).to(x.dtype)
        return out if self.bias is None else out + self.bias


def use_mixed_precision(model: nn.Module) -> nn.Module:
    """Swap the matmul layers of a float32 ``model`` for ``MixedLinear``, in place, and give it
    the lean single-token step where the architecture allows (``engine.runtime.mixed_step``)."""
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if name in QUANTIZED_LAYERS and type(child) is nn.Linear:
                if child.weight.dtype != torch.float32:
                    raise ValueError(
                        f"mixed precision needs float32 weights, got {child.weight.dtype}"
                    )
                setattr(parent, name, MixedLinear(child))
    if LeanStep.supports(model):
        use_lean_pass(model, LeanStep(model))
    return model
