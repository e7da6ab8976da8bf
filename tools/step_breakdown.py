"""Where a plain int4 decoding step of the embedded model spends its time, and what
``torch.compile`` makes of the same step.

    python tools/step_breakdown.py             # the step, then its matmuls by kind, 1 and 2 threads
    python tools/step_breakdown.py --compile   # also the step compiled by inductor (minutes)

The step is ``LeanInt4Pass`` (``engine.runtime.lean_step``) on one token after a short prompt.
The matmuls are timed alone on the model's own weights: the 4-bit blocks, the adapter's
low-rank terms (two 8-bit kernels per linear layer) and the 8-bit head; what the step takes
beyond their sum is norms, rotary, attention, residuals and dispatch. ``--compile`` compiles
a function doing what the lean pass does for a batch-1 pass (dynamic shapes: one graph for
steps and verification passes) and reports compile time, step time, whether its logits
equal the eager step's and whether row 0 of a 4-token pass equals the 1-token pass (what
lossless speculation would need). Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def per_call_us(fn, calls: int = 300) -> float:
    for _ in range(20):
        fn()
    started = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - started) / calls * 1e6


def matmul_breakdown(lean, threads: int) -> dict[str, float]:
    """Per-step milliseconds of each kind of matmul at ``threads`` threads (one token)."""
    import torch

    torch.set_num_threads(threads)
    inputs = {
        n: torch.randn(1, n).to(torch.bfloat16)
        for n in (lean.hidden[0], lean.intermediate, lean.heads * lean.head_dim)
    }
    base = low_rank = 0.0
    for layer in lean.layers[0][1:3] + lean.layers[0][4:]:  # qkv, o, gate_up, down of one block
        x = inputs[layer.in_features]
        base += per_call_us(
            lambda x=x, layer=layer: torch._weight_int4pack_mm_for_cpu(
                x, layer.packed, 32, layer.scales_offsets
            )
        )
        if layer.down is not None:
            low_rank += per_call_us(lambda x=x, layer=layer: layer.up.rows(layer.down.rows(x)))
    head = per_call_us(lambda: lean.head.rows(inputs[lean.hidden[0]]), calls=50)
    blocks = len(lean.layers)
    return {
        "4-bit blocks": base * blocks / 1e3,
        "adapter low-rank terms": low_rank * blocks / 1e3,
        "8-bit head": head / 1e3,
    }


def compiled_step(lean):
    """The lean pass's arithmetic for one batch-1 pass as one function torch.compile can take."""
    import torch
    import torch.nn.functional as F

    h, hkv, d, inner = lean.heads, lean.kv_heads, lean.head_dim, lean.intermediate

    def norm(x, weight):
        return F.rms_norm(x.float(), lean.hidden, weight, lean.eps).to(torch.bfloat16)

    def rows(layer, x):
        return layer.rows(x)

    def step(tokens, positions, k, v, mask):
        n, span = tokens.shape[0], mask.shape[-1]
        cos = lean.cos[positions].to(torch.bfloat16)[:, None]
        sin = lean.signed_sin[positions].to(torch.bfloat16)[:, None]
        x = lean.embeddings[tokens]
        for i, (input_norm, qkv_proj, o_proj, post_norm, gate_up_proj, down_proj) in enumerate(
            lean.layers
        ):
            qkv = rows(qkv_proj, norm(x, input_norm))
            qk = qkv[:, : (h + hkv) * d].view(n, h + hkv, d)
            qk = qk * cos + qk.roll(lean.half, -1) * sin
            k[i, 0].index_copy_(1, positions, qk[:, h:].transpose(0, 1))
            v[i, 0].index_copy_(
                1, positions, qkv[:, (h + hkv) * d :].view(n, hkv, d).transpose(0, 1)
            )
            queries = qk[:, :h].reshape(n, hkv, h // hkv, d)
            attended = F.scaled_dot_product_attention(
                queries,
                k[i, :, :, :span].expand(n, -1, -1, -1),
                v[i, :, :, :span].expand(n, -1, -1, -1),
                attn_mask=mask.reshape(n, 1, 1, -1),
            )
            x = x + rows(o_proj, attended.reshape(n, h * d))
            gate_up = rows(gate_up_proj, norm(x, post_norm))
            x = x + rows(down_proj, F.silu(gate_up[:, :inner]) * gate_up[:, inner:])
        return lean.head.rows(norm(x, lean.final_norm))

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--compile", action="store_true", help="also time the step compiled by torch.compile"
    )
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import torch

    from engine.runtime.model import aligned_mask
    from promptx.backends.embedded import EmbeddedBackend

    torch.set_num_threads(args.threads)
    model = EmbeddedBackend(quiet=True).generator.model
    lean = model.lean
    if type(lean).__name__ != "LeanInt4Pass":
        sys.exit(f"the embedded model runs {model.precision} here, not the int4 lean pass")
    cache = model.new_cache(512)
    prompt = torch.arange(100, 140)[None]
    with torch.inference_mode():
        token = model(prompt, cache).logits[0, -1].argmax().reshape(1, 1)
        cache.commit(prompt.shape[1])
        step_ms = per_call_us(lambda: lean(token, cache), calls=100) / 1e3
        print(
            f"lean int4 step: {step_ms:.2f} ms ({1e3 / step_ms:.1f} steps/s), "
            f"{args.threads} threads"
        )
        for threads in (args.threads, 1):
            parts = matmul_breakdown(lean, threads)
            shown = ", ".join(f"{name} {ms:.2f} ms" for name, ms in parts.items())
            print(f"  matmuls at {threads} thread(s): {shown}; sum {sum(parts.values()):.2f} ms")
        torch.set_num_threads(args.threads)
        if args.compile:
            report_compiled(lean, cache, token, step_ms, aligned_mask)


def report_compiled(lean, cache, token, eager_ms: float, aligned_mask) -> None:
    import torch

    step = compiled_step(lean)
    pos = cache.length
    one = (
        token.reshape(1),
        torch.tensor([pos]),
        cache.k,
        cache.v,
        aligned_mask(None, pos, 1, "cpu"),
    )
    reference = lean(token, cache).logits[0]
    compiled = torch.compile(step, dynamic=True)
    started = time.perf_counter()
    logits = compiled(*one)
    print(
        f"torch.compile: first call {time.perf_counter() - started:.1f} s; logits equal eager: "
        f"{torch.equal(logits, reference)} (largest difference "
        f"{(logits.float() - reference.float()).abs().max():.3g})"
    )
    compiled_ms = per_call_us(lambda: compiled(*one), calls=50) / 1e3
    print(
        f"  compiled step {compiled_ms:.2f} ms vs eager {eager_ms:.2f} ms "
        f"({eager_ms / compiled_ms:.2f}x)"
    )
    four = (
        torch.cat([token.reshape(1), torch.tensor([5, 6, 7])]),
        torch.arange(pos, pos + 4),
        cache.k,
        cache.v,
        aligned_mask(None, pos, 4, "cpu"),
    )
    started = time.perf_counter()
    rows = compiled(*four)
    print(
        f"  4-token pass: first call {time.perf_counter() - started:.1f} s; "
        f"its row 0 equals the 1-token pass: {torch.equal(rows[0], logits[0])}"
    )


if __name__ == "__main__":
    main()
