"""EnhanceOptions: every per-call option checked in one place, before any model loads."""

import pytest

from promptx import EnhanceOptions, Enhancer
from promptx.batch_run import run_batch
from promptx.errors import InvalidInputError
from promptx.profiles.registry import default_registry
from promptx.request import EnhanceRequest


@pytest.mark.parametrize(
    "options, message",
    [
        ({"colour": "red"}, "unknown option 'colour'; the options are: image, caption, seed"),
        ({"temperature": "hot"}, "temperature must be between 0 and 2"),
        ({"temperature": 2.5}, "temperature must be between 0 and 2"),
        ({"max_new_tokens": 0}, "max_new_tokens must be between 1 and 4096"),
        ({"max_new_tokens": 12.5}, "max_new_tokens must be between 1 and 4096"),
        ({"seed": -1}, "seed must be a non-negative integer"),
        ({"seed": True}, "seed must be a non-negative integer"),
        ({"seed": 2**63}, "seed must be a non-negative integer up to"),
        ({"caption": 7}, "caption must be a string"),
        ({"style": ["cinematic"]}, "style must be a string"),
        ({"temperature": float("nan")}, "temperature must be between 0 and 2"),
        ({"seed": "7"}, "seed must be a non-negative integer up to"),
        ({"language": "xx"}, "unknown language 'xx'; use 'en', 'keep', a language code"),
        ({"language": 5}, "unknown language 5; use 'en', 'keep'"),
        ({"system_prompt": 3}, "system_prompt must be a string"),
        ({"force": "yes"}, "force must be true or false, not 'yes'"),
        ({"constrain": None}, "constrain must be true or false, not None"),
        ({"speculative": "no"}, "speculative must be true or false, not 'no'"),
        ({"strength": "heavy"}, "strength must be one of light, medium, full, not 'heavy'"),
        ({"colour": "red", "seed": -1}, "unknown option 'colour'"),  # an unknown name first
    ],
)
def test_bad_options_are_typed_errors_before_the_model_loads(options, message):
    enhancer = Enhancer(quiet=True)
    with pytest.raises(InvalidInputError) as raised:
        enhancer.enhance("a cat", "video", **options)
    assert message in str(raised.value)
    assert enhancer._backend is None  # refused before loading anything


def test_a_batch_run_with_a_wrong_option_writes_no_row():
    lines = []
    with pytest.raises(InvalidInputError, match="unknown option 'sede'"):
        run_batch(Enhancer(quiet=True), [], "video", {"sede": 3}, log=None, emit=lines.append)
    assert lines == []


def test_defaults_fill_only_what_the_caller_left_open():
    options = EnhanceOptions.of({"seed": 3, "speculative": False})
    filled = options.with_defaults(speculative=True, system_prompt="Be brief.")
    assert (filled.seed, filled.speculative, filled.system_prompt) == (3, False, "Be brief.")


def test_options_are_checked_when_made_and_filled_and_stay_as_made():
    with pytest.raises(InvalidInputError, match="^seed must be a non-negative integer"):
        EnhanceOptions(seed=-1)
    with pytest.raises(InvalidInputError, match="^speculative must be true or false, not 'yes'"):
        EnhanceOptions().with_defaults(speculative="yes")  # an Enhancer's default is checked too
    with pytest.raises(
        InvalidInputError, match="unknown option 'sede'; the options are: image, caption"
    ):
        EnhanceOptions().with_defaults(sede=3)
    options = EnhanceOptions(seed=3, temperature=0)
    assert options.with_defaults(seed=4, strength="full") == EnhanceOptions(
        seed=3, temperature=0, strength="full"
    )
    assert (options.temperature, options.force, options.constrain) == (0, False, True)
    with pytest.raises(Exception):
        options.seed = 4  # frozen


def test_the_request_resolves_open_options_from_the_profile():
    profile = default_registry().get("wan")
    request = EnhanceRequest.build(profile, "  a cat   on a mat ", EnhanceOptions(seed=5))
    assert request.prompt == "a cat on a mat"
    assert (request.temperature, request.max_new_tokens) == (
        profile.temperature,
        profile.max_new_tokens,
    )
    assert request.seed == 5 and request.speculative is True
    fixed = EnhanceRequest.build(
        profile, "a cat", EnhanceOptions(temperature=0.0, max_new_tokens=12, speculative=False)
    )
    assert (fixed.temperature, fixed.max_new_tokens, fixed.speculative) == (0.0, 12, False)


@pytest.mark.parametrize("target", [None, 5, ["video"]])
def test_a_target_that_is_no_name_is_a_typed_error(target):
    with pytest.raises(InvalidInputError, match="target must be a target name"):
        Enhancer(quiet=True).enhance("a cat", target)


def test_enhance_many_refuses_one_string_and_names_a_bad_item():
    enhancer = Enhancer(quiet=True, strength="light")
    with pytest.raises(InvalidInputError, match="a list of prompts, not one string"):
        enhancer.enhance_many("a cat", "video")
    with pytest.raises(InvalidInputError, match="prompt 1: prompt is empty"):
        enhancer.enhance_many(["a cat", "  ", "a dog"], "video")
    with pytest.raises(InvalidInputError, match="prompt 2: prompt must be a string"):
        enhancer.enhance_many(["a cat", "a dog", 7], "video")
    assert [r.original_prompt for r in enhancer.enhance_many(["a cat", "a dog"], "video")] == [
        "a cat",
        "a dog",
    ]
    assert enhancer._backend is None  # light loads no model, in a batch either
