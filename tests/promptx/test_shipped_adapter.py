"""promptx's own fine-tune of the embedded model: shipped small with a card, merged into the default
model at prepare time, different from the base model, and faithful on held-out prompts."""

from __future__ import annotations

from pathlib import Path

import pytest

from promptx import models

pytestmark = pytest.mark.slow
HELDOUT = Path(__file__).resolve().parents[2] / "data" / "tuning" / "heldout"


def test_the_adapter_ships_small_with_a_model_card():
    from engine.training.lora import adapter_extra, read_adapter_info

    path = models.shipped_adapter()
    assert path is not None, f"no adapter at {models.SHIPPED_ADAPTER}"
    assert path.stat().st_size <= 25 * 2**20
    info = read_adapter_info(path)
    assert info.rank >= 1 and adapter_extra(info)["prompt_style"] == "short"
    card = (path.parent / "README.md").read_text()
    for needed in (
        "promptx tune",
        "data/tuning",
        "LoRA",
        "held-out",
        "smollm2-135m-instruct-base",
        "Apache-2.0",
        "MIT",
    ):
        assert needed in card, f"the model card does not mention {needed}"


def test_the_default_model_is_the_tuned_one_and_differs_from_the_base(model_dir, fp32_model):
    import torch

    from engine.weights.loading import load_transformer

    assert models.prompt_style_of(model_dir) == "short"
    base_dir = models.prepare(models.resolve_model(models.BASE_NAME), quiet=True)
    assert models.prompt_style_of(base_dir) == "full" and base_dir != model_dir
    tuned, tokenizer = fp32_model
    base = load_transformer(base_dir)
    ids = torch.tensor([tokenizer.encode("A lighthouse on a rocky point at dusk")])
    difference = (
        (tuned(ids, tuned.new_cache(32)).logits - base(ids, base.new_cache(32)).logits).abs().max()
    )
    assert float(difference) > 0.1


def test_tuned_outputs_pass_the_assessment_on_held_out_prompts(model_dir):
    """Eight held-out inputs (one per profile, round-robin), default settings, through the real
    pipeline."""
    import promptx
    from promptx.tune import balanced, passes_on
    from promptx.tuning_pairs import read_pairs

    rows, _ = read_pairs([HELDOUT])
    result = passes_on(promptx.Enhancer(quiet=True, strength="full"), balanced(rows, 8))
    failed = [e for e in result.examples if not e["passed"]]
    assert result.n == 8 and result.passed >= 7, failed  # at most one fallback in eight
