"""Generator: the object that owns a loaded model; precision choices and their limits."""

from __future__ import annotations

import pytest
import torch

from engine.decode.sampling import SamplingParams
from engine.decode.stats import DecodeStats
from engine.generator import ContextOverflowError, Generator
from engine.runtime.device import parse_dtype
from engine.speculative.drafter import Drafter, DrafterConfig

pytestmark = pytest.mark.slow


def test_parse_dtype_names():
    assert parse_dtype("fp32", "cpu") is torch.float32
    assert parse_dtype("bf16", "cpu") is torch.bfloat16
    assert parse_dtype("INT8", "cpu") == "int8"
    with pytest.raises(ValueError, match="unknown dtype"):
        parse_dtype("float8", "cpu")


def test_int8_decodes_and_never_speculates(model_dir):
    generator = Generator.from_dir(model_dir, dtype="int8")
    generator.drafter = Drafter(DrafterConfig.for_target(generator.model.config))  # never used
    assert not generator.can_speculate
    # a real enhancement prompt in the model's own style (the tuned default may end a bare chat at
    # once)
    from promptx.models import prompt_style_of
    from promptx.profiles.registry import default_registry
    from promptx.profiles.render import render_messages

    messages = render_messages(
        default_registry().get("image"), "a red kite", prompt_style=prompt_style_of(model_dir)
    )
    ids = generator.tokenizer.encode_chat(messages)
    stats = DecodeStats()
    out = generator.generate(ids, SamplingParams(max_new_tokens=12), speculative=True, stats=stats)
    assert 0 < len(out) <= 12 and stats.accepted_lengths == []  # plain decoding ran


def test_prompt_beyond_the_context_is_refused(model_dir):
    generator = Generator.from_dir(model_dir, dtype="float32")
    with pytest.raises(ContextOverflowError, match="context holds") as caught:
        generator.generate([1] * generator.context_window, SamplingParams(max_new_tokens=8))
    assert (
        isinstance(caught.value, ValueError)
        and caught.value.prompt_tokens == generator.context_window
    )
    with pytest.raises(ContextOverflowError):
        generator.generate_many(
            [[1, 2], [1] * generator.context_window], [SamplingParams(max_new_tokens=8)] * 2
        )


@pytest.mark.parametrize("dtype", ["float32", "int4"])
def test_a_batch_decodes_each_prompt_as_it_decodes_alone(model_dir, dtype):
    """generate_many: batched plain decoding whose every row equals that prompt decoded alone,
    greedy and sampled with a seed (the texts of concurrent enhance calls do not depend on their
    batch-mates)."""
    from engine.runtime.device import prefers_int4

    if dtype == "int4" and not prefers_int4("cpu"):
        pytest.skip("int4 is chosen only on CPUs with native bf16")
    generator = Generator.from_dir(model_dir, dtype=dtype)
    prompts = [
        generator.tokenizer.encode_chat([{"role": "user", "content": text}])
        for text in (
            "Describe a red fox in snow.",
            "Describe a lighthouse at dusk.",
            "Describe two blue cups.",
            "Describe an old tram in the rain.",
        )
    ]
    for params in (
        [SamplingParams(max_new_tokens=24)] * 4,
        [SamplingParams(max_new_tokens=24, temperature=0.8, top_p=0.95, seed=s) for s in range(4)],
    ):
        alone = [generator.generate(ids, p, speculative=False) for ids, p in zip(prompts, params)]
        stats = [DecodeStats() for _ in prompts]
        together = generator.generate_many(prompts, params, stats=stats)
        assert together == alone
        assert all(s.target_forwards >= 1 and s.accepted_lengths for s in stats)  # one batched run
