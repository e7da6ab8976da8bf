"""The drafter shipped for the embedded model: found automatically, lossless, and actually trained.

tau is measured here on held-out prompts (GenEval / VBench-2.0 style, not in the training
sets) with the real embedded model, so a drafter that was not trained fails.
"""

from __future__ import annotations

import pytest

from promptx.backends.drafters import SHIPPED_DIR, find_drafter

pytestmark = pytest.mark.slow

HELD_OUT = [
    ("image", "a photo of a purple backpack and a green umbrella"),
    ("video", "a drone shot over a frozen waterfall at sunrise"),
    ("image-to-video", "the dog shakes off the water"),
    ("image-to-image", "turn the car into a vintage convertible"),
]


def shipped_dirs():
    return (
        [d for d in sorted(SHIPPED_DIR.iterdir()) if (d / "config.json").is_file()]
        if SHIPPED_DIR.is_dir()
        else []
    )


def test_a_drafter_ships_with_a_model_card():
    dirs = shipped_dirs()
    assert dirs, f"no drafter in {SHIPPED_DIR}"
    for d in dirs:
        card = (d / "README.md").read_text()
        for needed in (
            "PartiPrompts",
            "VBench",
            "T2I-CompBench",
            "Apache-2.0",
            "MIT",
            "promptx draft train",
        ):
            assert needed in card, f"{d}/README.md does not mention {needed}"
        from engine.speculative.checkpoint import read_fingerprint

        assert read_fingerprint(d)


@pytest.fixture(scope="module")
def pair(model_dir):
    """The drafter with the model it was trained on: the embedded default (tuned), in float32."""
    import torch

    from engine.weights.loading import load_model
    from promptx.backends.drafters import load_drafter_for

    model, tokenizer = load_model(model_dir, torch.float32)
    path = find_drafter(model)
    assert path is not None, "the shipped drafter does not match the embedded model's fingerprint"
    drafter, _ = load_drafter_for(model, path)
    return model, tokenizer, drafter


def held_out_ids(tokenizer, model_dir):
    """The held-out requests rendered as the runtime renders them for this model."""
    from promptx.models import prompt_style_of
    from promptx.profiles.registry import default_registry
    from promptx.profiles.render import render_messages

    registry, style = default_registry(), prompt_style_of(model_dir)
    return [
        tokenizer.encode_chat(
            render_messages(
                registry.get(target),
                prompt,
                prompt_style=style,
                caption="a photo" if "to-" in target else None,
            )
        )
        for target, prompt in HELD_OUT
    ]


def test_shipped_drafter_is_trained_and_lossless(pair, model_dir):
    """tau > 2 (greedy, fixed tree) on held-out prompts, and output equal to plain decoding."""
    from engine.decode.autoregressive import decode_autoregressive
    from engine.decode.sampling import SamplingParams
    from engine.decode.stats import DecodeStats
    from engine.decode.stopping import StopChecker
    from engine.speculative.loop import FixedTree, decode_speculative

    model, tokenizer, drafter = pair
    tokens = forwards = 0
    for ids in held_out_ids(tokenizer, model_dir):
        params = SamplingParams(max_new_tokens=64)
        stats = DecodeStats()
        fast = [
            t
            for c in decode_speculative(
                model,
                drafter,
                ids,
                params,
                StopChecker(tokenizer.eos_token_ids, 64),
                stats,
                FixedTree(),
            )
            for t in c
        ]
        plain = list(
            decode_autoregressive(model, ids, params, StopChecker(tokenizer.eos_token_ids, 64))
        )
        assert fast == plain
        tokens, forwards = tokens + stats.new_tokens, forwards + stats.target_forwards
    assert tokens / forwards > 2.0, f"tau {tokens / forwards:.2f} on held-out prompts"


def test_enhance_uses_the_shipped_drafter(model_dir):
    """In an exact precision the Enhancer finds the drafter and decodes speculatively with it (the
    drafter's fixed tree here: the harness would decode a seeded sample plainly wherever its cost
    table says speculation does not pay, which depends on the machine)."""
    import promptx

    enhancer = promptx.Enhancer(quiet=True, dtype="float32", planner="tree", strength="full")
    result = enhancer.enhance("a red fox in a snowy forest", "image", seed=2, max_new_tokens=64)
    assert result.stats.speculative and result.stats.acceptance_length > 1.1
    plain = promptx.Enhancer(quiet=True, dtype="float32", speculative=False, strength="full")
    result = plain.enhance("a red fox in a snowy forest", "image", seed=2, max_new_tokens=64)
    assert not result.stats.speculative and result.stats.acceptance_length is None


def test_the_fastest_precision_decodes_plainly_without_loading_the_drafter(model_dir):
    """On a CPU without native bf16 the default is mixed precision, which never speculates."""
    import promptx
    from engine.runtime.device import MIXED, fastest_dtype

    if fastest_dtype("cpu") != MIXED:
        pytest.skip("this CPU runs bf16 natively: the default precision speculates")
    enhancer = promptx.Enhancer(quiet=True, strength="full")
    result = enhancer.enhance("a red fox in a snowy forest", "image", seed=2, max_new_tokens=64)
    assert not result.stats.speculative and result.stats.acceptance_length is None
    assert enhancer.backend.generator.drafter is None and not result.fallback


BF16_PROMPTS = [
    ("video", "a jellyfish drifting through dark water"),
    ("image", "a red bicycle leaning on a brick wall"),
    ("sdxl", "an old lighthouse on a cliff at dusk"),
    ("video", "a chef flipping a pancake in a busy kitchen"),
    ("image", "two cats sleeping on a windowsill"),
    ("wan", "a paper boat floating down a rainy street"),
    ("video", "a hot air balloon rising over a valley"),
    ("image", "a bowl of ramen with a soft egg"),
    ("sdxl", "a fox in a snowy birch forest"),
    ("video", "a skateboarder jumping a stair set at night"),
]


@pytest.mark.parametrize("dtype", ["bfloat16", "int4"])
def test_half_precision_speculative_decoding_equals_plain_decoding(model_dir, dtype):
    """Where bf16 is native (the default precision speculates there), greedy tree decoding through a
    Generator (exact half precision: engine.runtime.exact_rows; 4-bit weights: engine.runtime.int4)
    equals plain decoding in the same precision, token for token."""
    from engine.decode.autoregressive import decode_autoregressive
    from engine.decode.sampling import SamplingParams
    from engine.decode.stopping import StopChecker
    from engine.generator import Generator
    from engine.runtime.device import cpu_has_fast_bf16
    from engine.speculative.loop import FixedTree, TreeConfig, decode_speculative
    from promptx.backends.drafters import load_drafter_for
    from promptx.models import prompt_style_of
    from promptx.profiles.registry import default_registry
    from promptx.profiles.render import render_messages

    if not cpu_has_fast_bf16():
        pytest.skip(
            "no native bf16 on this CPU: bf16 and int4 are not defaults here, "
            "and emulated bf16 is not checked"
        )
    generator = Generator.from_dir(model_dir, dtype=dtype)
    if not generator.exact_batches:
        pytest.skip(
            f"{dtype}: this CPU's kernels mix the rows of a pass, "
            "so it decodes plainly (no speculation)"
        )
    model, tokenizer = generator.model, generator.tokenizer
    assert model.precision == dtype
    drafter, _ = load_drafter_for(model, find_drafter(model))
    registry, style = default_registry(), prompt_style_of(model_dir)
    for target, prompt in BF16_PROMPTS:
        ids = tokenizer.encode_chat(
            render_messages(registry.get(target), prompt, prompt_style=style)
        )
        params = SamplingParams(max_new_tokens=128)
        plain = list(
            decode_autoregressive(model, ids, params, StopChecker(tokenizer.eos_token_ids, 128))
        )
        fast = [
            t
            for chunk in decode_speculative(
                model,
                drafter,
                ids,
                params,
                StopChecker(tokenizer.eos_token_ids, 128),
                planner=FixedTree(TreeConfig(budget=16)),
            )
            for t in chunk
        ]
        first_difference = next(
            (i for i, (a, b) in enumerate(zip(fast, plain)) if a != b), min(len(fast), len(plain))
        )
        assert fast == plain, f"{target}: {prompt!r} differs at token {first_difference}"


def test_a_batch_in_int4_decodes_each_prompt_as_alone(model_dir):
    """Where int4 speculates (exact rows), a batched decode (``enhance_many``, ``--file``, a busy
    server) gives every prompt the text it gets alone, whatever its batch-mates: plain batched
    rounds and the shipped drafter's trees, greedy, against plain single-sequence decoding."""
    from engine.decode.autoregressive import decode_autoregressive
    from engine.decode.sampling import SamplingParams
    from engine.decode.stopping import StopChecker
    from engine.generator import Generator
    from engine.runtime.device import cpu_has_fast_bf16
    from engine.speculative.batch import RowTargets, decode_speculative_batch
    from engine.speculative.loop import FixedTree, TreeConfig
    from promptx.backends.drafters import load_drafter_for
    from promptx.models import prompt_style_of
    from promptx.profiles.registry import default_registry
    from promptx.profiles.render import render_messages

    if not cpu_has_fast_bf16():
        pytest.skip("no native bf16 on this CPU: int4 is not the default here")
    generator = Generator.from_dir(model_dir, dtype="int4")
    if not generator.exact_batches:
        pytest.skip("int4: this CPU's kernels mix the rows of a pass, so it decodes plainly")
    model, tokenizer = generator.model, generator.tokenizer
    assert RowTargets.fits(model)
    drafter, _ = load_drafter_for(model, find_drafter(model))
    registry, style = default_registry(), prompt_style_of(model_dir)
    prompts = [
        tokenizer.encode_chat(render_messages(registry.get(t), p, prompt_style=style))
        for t, p in BF16_PROMPTS[:6]
    ]
    budgets = [64, 40, 64, 64, 23, 64]
    plain = [
        list(
            decode_autoregressive(
                model,
                ids,
                SamplingParams(max_new_tokens=n),
                StopChecker(tokenizer.eos_token_ids, n),
            )
        )
        for ids, n in zip(prompts, budgets)
    ]
    for config in (
        TreeConfig(budget=0, max_depth=1, top_k=1),
        TreeConfig(budget=8, max_depth=5, top_k=3),
    ):
        got: list[list[int]] = [[] for _ in prompts]
        for index, chunk in decode_speculative_batch(
            model,
            drafter,
            prompts,
            [SamplingParams(max_new_tokens=n) for n in budgets],
            [StopChecker(tokenizer.eos_token_ids, n) for n in budgets],
            planner=FixedTree(config),
        ):
            got[index].extend(chunk)
        differ = [i for i, (a, b) in enumerate(zip(got, plain)) if a != b]
        assert not differ, f"budget {config.budget}: prompts {differ} differ"
