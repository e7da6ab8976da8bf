"""Where a plain int4 decoding step of the embedded model spends its time, and what
``torch.compile`` makes of the same step.

    python tools/step_breakdown.py             # the step, then its matmuls by kind, 1 and 2 threads
    python tools/step_breakdown.py --compile   # also the step compiled by inductor (minutes)

The step is ``Transformer.forward`` (the int4 model in exact mode) on one token after a short
prompt.
The matmuls are timed alone on the model's own weights: the 4-bit blocks, the adapter's
low-rank terms (two 8-bit kernels per linear layer) and the 8-bit head; what the step takes
beyond their sum is norms, rotary, attention, residuals and dispatch. ``--compile`` compiles
a flat function doing what the module path does for a batch-1 pass (dynamic shapes: one graph for
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


def matmul_breakdown(model, threads: int) -> dict[str, float]:
    """Per-step milliseconds of each kind of matmul at ``threads`` threads (one token)."""
    import torch

    torch.set_num_threads(threads)
    cfg = model.config
    inputs = {
        n: torch.randn(1, n).to(torch.bfloat16)
        for n in (cfg.hidden_size, cfg.intermediate_size, cfg.num_attention_heads * cfg.head_dim)
    }
    block = model.layers[0]
    base = low_rank = 0.0
    for layer in (block.self_attn.qkv_proj, block.self_attn.o_proj) + (
        block.mlp.gate_up_proj,
        block.mlp.down_proj,
    ):
        x = inputs[layer.in_features]
        base += per_call_us(
            lambda x=x, layer=layer: torch._weight_int4pack_mm_for_cpu(
                x, layer.packed, 32, layer.scales_offsets
            )
        )
        if layer.down is not None:
            low_rank += per_call_us(lambda x=x, layer=layer: layer.up.rows(layer.down.rows(x)))
    head = per_call_us(lambda: model.lm_head.rows(inputs[cfg.hidden_size]), calls=50)
    blocks = len(model.layers)
    return {
        "4-bit blocks": base * blocks / 1e3,
        "adapter low-rank terms": low_rank * blocks / 1e3,
        "8-bit head": head / 1e3,
    }


def compiled_step(model):
    """The module path's arithmetic for one batch-1 pass (no qkv bias) as one flat function
    torch.compile can take."""
    import torch
    import torch.nn.functional as F

    from engine.runtime.int4_rows import Int4Rows

    cfg = model.config
    h, hkv, d = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
    inner, hidden, eps = cfg.intermediate_size, (cfg.hidden_size,), cfg.rms_norm_eps
    weights = Int4Rows(model)  # the packed layers and float norms, as the batched pass reads them
    layers, embeddings, final_norm, head = (
        weights.layers,
        weights.embeddings,
        weights.final_norm,
        weights.head,
    )

    def norm(x, weight):
        return F.rms_norm(x.float(), hidden, weight, eps).to(torch.bfloat16)

    def rows(layer, x):
        return layer.rows(x)

    def step(tokens, positions, k, v, mask):
        n, span = tokens.shape[0], mask.shape[-1]
        cos = model.rope.cos[positions].to(torch.bfloat16)[:, None]
        sin = model.rope.signed_sin[positions].to(torch.bfloat16)[:, None]
        x = embeddings[tokens]
        for i, (input_norm, qkv_proj, o_proj, post_norm, gate_up_proj, down_proj) in enumerate(
            layers
        ):
            qkv = rows(qkv_proj, norm(x, input_norm))
            qk = qkv[:, : (h + hkv) * d].view(n, h + hkv, d)
            qk = qk * cos + qk.roll(d // 2, -1) * sin
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
        return head.rows(norm(x, final_norm))

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
    if model.precision != "int4" or not model.layout.lanes:
        sys.exit(f"the embedded model runs {model.precision} here, not int4 in exact mode")
    cache = model.new_cache(512)
    prompt = torch.arange(100, 140)[None]
    with torch.inference_mode():
        token = model(prompt, cache).logits[0, -1].argmax().reshape(1, 1)
        cache.commit(prompt.shape[1])
        step_ms = per_call_us(lambda: model(token, cache), calls=100) / 1e3
        print(f"int4 step: {step_ms:.2f} ms ({1e3 / step_ms:.1f} steps/s), {args.threads} threads")
        for threads in (args.threads, 1):
            parts = matmul_breakdown(model, threads)
            shown = ", ".join(f"{name} {ms:.2f} ms" for name, ms in parts.items())
            print(f"  matmuls at {threads} thread(s): {shown}; sum {sum(parts.values()):.2f} ms")
        torch.set_num_threads(args.threads)
        if args.compile:
            report_compiled(model, cache, token, step_ms, aligned_mask)


def report_compiled(model, cache, token, eager_ms: float, aligned_mask) -> None:
    import torch

    step = compiled_step(model)
    pos = cache.length
    one = (
        token.reshape(1),
        torch.tensor([pos]),
        cache.k,
        cache.v,
        aligned_mask(None, pos, 1, "cpu"),
    )
    reference = model(token, cache).logits[0]
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
