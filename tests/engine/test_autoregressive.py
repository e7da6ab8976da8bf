"""The reference decoder: greedy equals transformers, sampling is seeded, stops are exact."""

from __future__ import annotations

import pytest
import torch

from engine.decode.autoregressive import decode_autoregressive
from engine.decode.sampling import SamplingParams
from engine.decode.stats import DecodeStats
from engine.decode.stopping import StopChecker

pytestmark = pytest.mark.slow

PROMPTS = [
    "Write a detailed prompt for a video of a cat on a skateboard.",
    "Describe a foggy harbour at dawn for an image generator.",
    "Expand: a robot painting a sunflower.",
]


def run(model, tok, prompt, params, stop_strings=()):
    ids = tok.encode_chat([{"role": "user", "content": prompt}])
    stop = StopChecker(tok.eos_token_ids, params.max_new_tokens, stop_strings, tok.decode)
    stats = DecodeStats()
    return ids, list(decode_autoregressive(model, ids, params, stop, stats)), stop, stats


@pytest.mark.parametrize("prompt", PROMPTS)
def test_greedy_equals_transformers_generate(fp32_model, model_dir, prompt):
    from transformers import AutoModelForCausalLM

    model, tok = fp32_model
    ids, ours, _, _ = run(model, tok, prompt, SamplingParams(max_new_tokens=48))
    hf = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    with torch.no_grad():
        ref = hf.generate(
            torch.tensor([ids]),
            max_new_tokens=48,
            do_sample=False,
            eos_token_id=list(tok.eos_token_ids),
            pad_token_id=tok.eos_token_ids[0],
        )
    expected = [t for t in ref[0, len(ids) :].tolist() if t not in tok.eos_token_ids]
    assert ours == expected


def test_same_seed_same_sample_and_different_seed_differs(fp32_model):
    model, tok = fp32_model
    params = SamplingParams(temperature=0.9, top_p=0.95, max_new_tokens=24, seed=7)
    first = run(model, tok, PROMPTS[0], params)[1]
    again = run(model, tok, PROMPTS[0], params)[1]
    other = run(
        model,
        tok,
        PROMPTS[0],
        SamplingParams(temperature=0.9, top_p=0.95, max_new_tokens=24, seed=8),
    )[1]
    assert first == again
    assert first != other


def test_max_new_tokens_is_exact_and_stats_filled(fp32_model):
    model, tok = fp32_model
    _, out, stop, stats = run(
        model, tok, PROMPTS[1], SamplingParams(max_new_tokens=17, repetition_penalty=1.2)
    )
    assert len(out) == 17 and stop.finish_reason == "length"
    assert stats.new_tokens == 17 and stats.target_forwards == 16 and stats.prompt_tokens > 0


def test_stop_string_ends_generation_at_the_token_that_completes_it(fp32_model):
    model, tok = fp32_model
    _, free, _, _ = run(model, tok, PROMPTS[0], SamplingParams(max_new_tokens=40))
    text = tok.decode(free)
    word = text.split()[3]  # a word the free run is known to produce
    _, out, stop, _ = run(
        model, tok, PROMPTS[0], SamplingParams(max_new_tokens=40), stop_strings=(word,)
    )
    assert stop.finish_reason == "stop"
    assert word in tok.decode(out) and word not in tok.decode(out[:-1])
    assert out == free[: len(out)]
    assert word not in stop.trim_text(tok.decode(out))


def test_zero_budget_generates_nothing(fp32_model):
    model, tok = fp32_model
    _, out, stop, _ = run(model, tok, PROMPTS[0], SamplingParams(max_new_tokens=0))
    assert out == [] and stop.finish_reason == "length"
