"""``strength`` through the API and the CLI with the embedded model: light composes vetted phrases
without loading the model (the default), medium ranks them with it, full is free prose.

(The server takes it too: test_serve.test_enhance_takes_a_strength.)
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import promptx
from promptx.cli.main import main
from promptx.errors import InvalidInputError

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def enhancer(model_dir):
    return promptx.Enhancer(quiet=True)


def test_light_is_the_embedded_default_and_never_loads_the_model(model_dir):
    fresh = promptx.Enhancer(quiet=True)
    result = fresh.enhance("a knight fighting a dragon", "video", seed=3)
    assert fresh._backend is None  # nothing was loaded
    assert result.strength == "light" and not result.fallback
    assert result.text.startswith("A knight fighting a dragon.")
    assert "appearance" in result.added and all(v in result.text for v in result.added.values())
    assert result.stats.completion_tokens == 0 and result.stats.backend == "phrases"
    again = promptx.Enhancer(quiet=True).enhance(
        "a knight fighting a dragon", "video", strength="light", seed=3
    )
    assert again.text == result.text


def test_medium_ranks_the_same_draws_with_the_model(enhancer):
    result = enhancer.enhance(
        "a bowl of ramen on a wooden table", "image", seed=0, strength="medium"
    )
    assert result.strength == "medium" and result.stats.backend == "embedded"
    assert result.text.startswith("A bowl of ramen on a wooden table.") and result.added
    light = enhancer.enhance("a bowl of ramen on a wooden table", "image", seed=0, strength="light")
    # the same seeded draw: where the model prefers another candidate, the texts differ
    assert set(light.added) == set(result.added)
    assert (
        enhancer.enhance(
            "a bowl of ramen on a wooden table", "image", seed=0, strength="medium"
        ).text
        == result.text
    )
    scores = enhancer.backend.score_phrases(
        "a bowl of ramen on a wooden table",
        [
            ("Lighting:", "soft window light over the table"),
            ("Lighting:", "cold light from a distant star"),
        ],
    )
    assert len(scores) == 2 and scores[0] > scores[1]


def test_full_is_free_prose(enhancer):
    result = enhancer.enhance(
        "a lighthouse at dusk", "image", seed=0, temperature=0.0, strength="full"
    )
    assert result.strength == "full" and result.added == {} and result.stats.completion_tokens > 0


def test_an_enhancer_wide_strength_and_a_bad_one(model_dir):
    light = promptx.Enhancer(quiet=True, strength="light")
    assert light.enhance("a cat", "sdxl").strength == "light"
    with pytest.raises(InvalidInputError, match="strength must be one of"):
        light.enhance("a cat", "sdxl", strength="heavy")
    with pytest.raises(InvalidInputError, match="strength must be one of"):
        promptx.Enhancer(strength="strong")


def test_a_foreign_prompt_is_returned_as_it_is(enhancer):
    result = enhancer.enhance("一只猫在滑板上", "wan", strength="light")
    assert result.skipped and result.text == "一只猫在滑板上"


def test_the_stream_of_a_structured_enhancement_is_its_text(enhancer):
    stream = enhancer.stream("a cat on a skateboard", "video", strength="light", seed=1)
    assert "".join(stream) == stream.result.text


def test_cli_strength(model_dir):
    runner = CliRunner()
    out = runner.invoke(
        main, ["enhance", "a red vintage car", "--target", "sdxl", "--strength", "light", "--json"]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert (
        data["strength"] == "light"
        and data["text"].startswith("a red vintage car, ")
        and data["added"]
    )
    bad = runner.invoke(main, ["enhance", "a car", "--strength", "heavy"])
    assert bad.exit_code == 2 and "heavy" in bad.output
