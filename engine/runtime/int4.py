"""4-bit weights for CPU decoding (dtype "int4"): bf16 activations, weights in groups of 32.

A 135M model at batch 1 is bound by reading its weights: one bf16 token reads
~270 MB. ``quantize_int4`` swaps the decoder blocks' linear layers for
``Int4Linear``s (each group of 32 input weights of an output row becomes
4-bit codes with a scale and an offset, min/max: the embedded GGUF's Q4_1
blocks have exactly this shape, so its weights come back unchanged) and the
head for an ``Int8Linear`` (8 bits per weight, one scale per row: the head
came from 8-bit weights and loses too much in 4). PyTorch's CPU kernels run
them (``torch._weight_int4pack_mm_for_cpu``, ``torch._weight_int8pack_mm``).

A tuned model keeps its adapter apart (``engine.weights.adapters.split_adapter``):
the 4-bit base plus the low-rank terms as ``Int8Linear``s (tiny matmuls: bf16
ones cost ~3x more here, and fp32 ones mix rows). Rounding the merged weights
to 4 bits would wipe the adapter out: its changes are far smaller than a step.

Both kernels compute each row of a pass on its own, whatever the row count,
so tree verification reproduces single-token steps bit for bit (speculation
stays lossless; ``rows_are_independent`` checks it on this machine before a
``Generator`` relies on it). They are compute-bound on many rows, so passes
of more than ``WIDE_ROWS`` rows (prompt prefill) use bf16 copies of the same
weights instead: prefill is shared by plain and speculative decoding, so both
still see the same prompt cache.

Not here: loading (``engine.weights.loading.load_int4``), when to use it
(``engine.generator``), int8 activations (``engine.runtime.quantize``).
"""

from __future__ import annotations

import functools
import time

import torch
import torch.nn.functional as F
from torch import nn

from .model import Transformer
from .registered import buffer, parameter

GROUP = 32  # weights per scale/offset pair along the input dimension
LEVELS = 15  # 4-bit codes 0..15
WIDE_ROWS = 64  # passes of more rows than this run in bf16 (see the module docstring)
INT8_ALIGN = 32  # the int8 kernel reads inputs in blocks (it crashed on sizes not a multiple of 16)
LowRank = tuple[torch.Tensor, torch.Tensor]  # (A [rank, in], scale * B [out, rank])


def int4_available() -> bool:
    """This PyTorch build has the CPU int4 and int8 weight kernels."""
    return all(
        hasattr(torch, name)
        for name in (
            "_weight_int4pack_mm_for_cpu",
            "_convert_weight_to_int4pack_for_cpu",
            "_weight_int8pack_mm",
        )
    )


def pack_int4(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, float]:
    """(packed codes, scales and offsets [K/GROUP, N, 2] bf16, the dequantized weight in fp32,
    grid distance) of a float weight [N, K]; K must be a multiple of ``GROUP``. The grid
    distance is the largest distance of a weight from its 4-bit value, in quantization steps
    of its group: ~0 when the weights were 4-bit already, up to 0.5 for arbitrary ones."""
    out_features, in_features = weight.shape
    if in_features % GROUP:
        raise ValueError(
            f"int4 needs the input size to be a multiple of {GROUP}, got {in_features}"
        )
    groups = weight.detach().float().reshape(out_features, in_features // GROUP, GROUP)
    low, high = groups.amin(-1), groups.amax(-1)
    scale = ((high - low) / LEVELS).clamp(min=torch.finfo(torch.float32).tiny)
    codes = ((groups - low[..., None]) / scale[..., None]).round().clamp(0, LEVELS)
    # the kernel computes (code - 8) * scale + offset, with scale and offset in bf16
    scale16 = scale.to(torch.bfloat16)
    offset16 = (low + 8 * scale).to(torch.bfloat16)
    dequantized = (codes - 8) * scale16.float()[..., None] + offset16.float()[..., None]
    distance = float(((groups - dequantized).abs().amax(-1) / scale).max())
    packed = torch._convert_weight_to_int4pack_for_cpu(
        codes.reshape(out_features, in_features).to(torch.int32), 1
    )
    scales_offsets = torch.stack([scale16, offset16], dim=-1).transpose(0, 1).contiguous()
    return packed, scales_offsets, dequantized.reshape(out_features, in_features), distance


def _rows_through(x: torch.Tensor, layer: nn.Module, kernel) -> torch.Tensor:
    """bf16 ``x`` [..., in] through ``kernel`` ([rows, in] -> [rows, out]) for passes of up to
    ``WIDE_ROWS`` rows, through the layer's bf16 ``weight`` beyond (no bias)."""
    if x.dim() == 2:  # the target's hidden stream (``Transformer.forward``): no reshapes
        return kernel(x) if x.shape[0] <= WIDE_ROWS else F.linear(x, layer.weight)
    rows = x.numel() // layer.in_features
    if rows > WIDE_ROWS:
        return F.linear(x, layer.weight)
    return kernel(x.reshape(rows, layer.in_features)).reshape(*x.shape[:-1], layer.out_features)


def _bf16(x: torch.Tensor) -> torch.Tensor:
    """``x.to(torch.bfloat16)`` without the call when it is bf16 already (a step's usual case)."""
    return x if x.dtype == torch.bfloat16 else x.to(torch.bfloat16)


class Int8Linear(nn.Module):
    """A linear layer with 8-bit weights, one bf16 scale per output row; bf16 in and out.
    Used for the head and for the low-rank terms of an adapter."""

    codes, scales = buffer(), buffer()

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None) -> None:
        super().__init__()
        self.out_features, self.in_features = weight.shape
        weight = weight.detach()
        self.pad = (
            -self.in_features % INT8_ALIGN
        )  # zero columns the kernel needs (zero inputs then)
        scale = (weight.float().abs().amax(1) / 127).clamp(min=torch.finfo(torch.float32).tiny)
        codes = (F.pad(weight.float(), (0, self.pad)) / scale[:, None]).round().clamp(-127, 127)
        self.register_buffer("codes", codes.to(torch.int8), persistent=False)
        self.register_buffer("scales", scale.to(torch.bfloat16), persistent=False)
        self.weight = weight.to(
            torch.bfloat16
        )  # for passes over WIDE_ROWS rows (may be the embeddings)
        self.bias = None if bias is None else bias.detach().to(torch.bfloat16)

    def tensors(self, prefix: str, skip_weight: bool = False) -> dict[str, torch.Tensor]:
        """Everything ``restore`` needs, by name (``skip_weight``: the bf16 weight is stored
        elsewhere)."""
        out = {f"{prefix}.codes": self.codes, f"{prefix}.scales": self.scales}
        if not skip_weight:
            out[f"{prefix}.weight"] = self.weight
        if self.bias is not None:
            out[f"{prefix}.bias"] = self.bias
        return out

    @classmethod
    def restore(
        cls, prefix: str, tensors: dict[str, torch.Tensor], weight: torch.Tensor | None = None
    ) -> "Int8Linear":
        """The layer ``tensors`` describes (see ``tensors``), without quantizing again."""
        layer = cls.__new__(cls)
        nn.Module.__init__(layer)
        layer.weight = weight if weight is not None else tensors[f"{prefix}.weight"]
        layer.out_features, layer.in_features = layer.weight.shape
        layer.pad = -layer.in_features % INT8_ALIGN
        layer.register_buffer("codes", tensors[f"{prefix}.codes"], persistent=False)
        layer.register_buffer("scales", tensors[f"{prefix}.scales"], persistent=False)
        layer.bias = tensors.get(f"{prefix}.bias")
        return layer

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = _rows_through(_bf16(x), self, self.rows)
        return out if self.bias is None else out + self.bias

    def rows(self, flat: torch.Tensor) -> torch.Tensor:
        """bf16 [rows, in] -> [rows, out] through the int8 kernel (no bias)."""
        flat = F.pad(flat, (0, self.pad)) if self.pad else flat
        return torch._weight_int8pack_mm(flat, self.codes, self.scales)


def _low_rank_layers(a: torch.Tensor, b: torch.Tensor) -> tuple[Int8Linear, Int8Linear]:
    """A [rank, in] and B [out, rank] as ``Int8Linear``s, the rank padded with zeros to
    ``INT8_ALIGN`` (exact zeros in between: no padding at run time)."""
    extra = -a.shape[0] % INT8_ALIGN
    return Int8Linear(F.pad(a.float(), (0, 0, 0, extra))), Int8Linear(F.pad(b.float(), (0, extra)))


class Int4Linear(nn.Module):
    """A linear layer with 4-bit weights (plus optional 8-bit low-rank terms); bf16 in and out."""

    packed, scales_offsets, weight, bias = buffer(), buffer(), buffer(), parameter()

    def __init__(self, linear: nn.Linear, low_rank: LowRank | None = None) -> None:
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        packed, scales_offsets, dequantized, self.grid_distance = pack_int4(linear.weight)
        self.register_buffer("packed", packed, persistent=False)
        self.register_buffer("scales_offsets", scales_offsets, persistent=False)
        # the same weights in bf16, for passes over WIDE_ROWS rows
        self.register_buffer("weight", dequantized.to(torch.bfloat16), persistent=False)
        self.bias = (
            None
            if linear.bias is None
            else nn.Parameter(linear.bias.detach().to(torch.bfloat16), requires_grad=False)
        )
        self.down, self.up = _low_rank_layers(*low_rank) if low_rank is not None else (None, None)

    def tensors(self, prefix: str) -> dict[str, torch.Tensor]:
        """Everything ``restore`` needs, by name."""
        out = {
            f"{prefix}.packed": self.packed,
            f"{prefix}.scales_offsets": self.scales_offsets,
            f"{prefix}.weight": self.weight,
        }
        if self.bias is not None:
            out[f"{prefix}.bias"] = self.bias.data
        if self.down is not None:
            out.update(self.down.tensors(f"{prefix}.down") | self.up.tensors(f"{prefix}.up"))
        return out

    @classmethod
    def restore(cls, prefix: str, tensors: dict[str, torch.Tensor]) -> "Int4Linear":
        """The layer ``tensors`` describes (see ``tensors``), without quantizing again."""
        layer = cls.__new__(cls)
        nn.Module.__init__(layer)
        layer.out_features, layer.in_features = tensors[f"{prefix}.weight"].shape
        layer.grid_distance = float("nan")  # not stored: the store keeps the model's
        for name in ("packed", "scales_offsets", "weight"):
            layer.register_buffer(name, tensors[f"{prefix}.{name}"], persistent=False)
        bias = tensors.get(f"{prefix}.bias")
        layer.bias = None if bias is None else nn.Parameter(bias, requires_grad=False)
        tuned = f"{prefix}.down.codes" in tensors
        layer.down, layer.up = (
            (
                Int8Linear.restore(f"{prefix}.down", tensors),
                Int8Linear.restore(f"{prefix}.up", tensors),
            )
            if tuned
            else (None, None)
        )
        return layer

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = _bf16(x)
        out = _rows_through(x, self, self.rows)
        if self.down is not None and x.numel() // self.in_features > WIDE_ROWS:
            out = out + self.up(self.down(x))  # (the kernel path adds them itself)
        return out if self.bias is None else out + self.bias

    def rows(self, flat: torch.Tensor) -> torch.Tensor:
        """bf16 [rows, in] -> [rows, out] through the int4 kernel plus the low-rank terms (no
        bias)."""
        out = torch._weight_int4pack_mm_for_cpu(flat, self.packed, GROUP, self.scales_offsets)
        if (
            self.down is not None
        ):  # straight to the kernels: a module call per term cost ~2 ms a token
            out = out + self.up.rows(self.down.rows(flat))
        return out


def quantize_int4(model: Transformer, low_rank: dict[str, LowRank] | None = None) -> float:
    """Make a float ``model`` an int4 one, in place: every linear layer of the blocks an
    ``Int4Linear`` (with the low-rank terms of ``low_rank``, by layer name), the head an
    ``Int8Linear``, the embeddings bf16 (norms stay fp32). Returns the largest grid distance
    (``pack_int4``) of the blocks' weights: ~0 means no weight changed."""
    if not int4_available():
        raise RuntimeError("this PyTorch build has no CPU int4 kernels")
    low_rank = low_rank or {}
    unknown = set(low_rank) - {name for name, m in model.named_modules() if type(m) is nn.Linear}
    if unknown:
        raise ValueError(
            f"low-rank terms for layers the model does not have: {sorted(unknown)[:3]}"
        )
    distance = 0.0
    for name, child in list(model.named_modules()):
        if type(child) is not nn.Linear or name == "lm_head":
            continue
        layer = Int4Linear(child, low_rank.get(name))
        distance = max(distance, layer.grid_distance)
        parent, _, leaf = name.rpartition(".")
        setattr(model.get_submodule(parent), leaf, layer)
    with torch.no_grad():
        model.embed_tokens.weight.data = model.embed_tokens.weight.data.to(torch.bfloat16)
    head = model.lm_head  # after the embeddings: a tied head shares them in bf16
    model.lm_head = Int8Linear(head.weight, head.bias)
    model.dtype, model.precision = torch.bfloat16, "int4"
    return distance


@functools.lru_cache(maxsize=None)
def rows_are_independent(threads: int) -> bool:
    """Whether both kernels give each row of a pass the numbers it gets alone, on this CPU
    at ``threads`` threads (probed once: passes of 1..WIDE_ROWS rows, heavy-tailed inputs)."""
    gen = torch.Generator().manual_seed(0)
    linear = nn.Linear(4 * GROUP, 256, bias=False)
    with torch.no_grad():
        linear.weight.copy_(torch.randn(256, 4 * GROUP, generator=gen) * 0.05)
    x = (
        torch.randn(WIDE_ROWS, 4 * GROUP, generator=gen)
        * torch.randn(WIDE_ROWS, 4 * GROUP, generator=gen).exp()
    ).to(torch.bfloat16)
    low_rank = (
        torch.randn(16, 4 * GROUP, generator=gen) * 0.05,
        torch.randn(256, 16, generator=gen) * 0.05,
    )
    with torch.inference_mode():
        for layer in (Int4Linear(linear, low_rank), Int8Linear(linear.weight)):
            alone = torch.cat([layer(x[i : i + 1]) for i in range(WIDE_ROWS)])
            if not all(
                torch.equal(layer(x[:rows]), alone[:rows])
                for rows in (2, 3, 5, 8, 17, 33, WIDE_ROWS)
            ):
                return False
    return True


@functools.lru_cache(maxsize=None)
def int4_is_faster(threads: int) -> bool:
    """Whether a one-row pass through a 4-bit layer of this model family's size beats the same
    pass in bf16 on this CPU at ``threads`` threads (median of 15 alternating timings, ~20 ms)."""
    gen = torch.Generator().manual_seed(0)
    linear = nn.Linear(576, 3072, bias=False)
    with torch.no_grad():
        linear.weight.copy_(torch.randn(3072, 576, generator=gen) * 0.05)
    int4, bf16 = Int4Linear(linear), linear.to(torch.bfloat16)
    x = torch.randn(1, 576, generator=gen).to(torch.bfloat16)
    timings: dict[str, list[float]] = {"int4": [], "bf16": []}
    with torch.inference_mode():
        for _ in range(15):
            for name, layer in (("int4", int4), ("bf16", bf16)):
                started = time.perf_counter()
                layer(x)
                timings[name].append(time.perf_counter() - started)
    median = {name: sorted(t)[len(t) // 2] for name, t in timings.items()}
    return median["int4"] < median["bf16"]
