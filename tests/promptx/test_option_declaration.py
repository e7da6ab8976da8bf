"""The per-call options are declared once (``promptx.options.EnhanceOptions``): ``promptx serve``'s
body, the ``promptx enhance`` flags and the diffusers wrapper's names are made from that
declaration. An option added, dropped or re-ranged there and not followed elsewhere fails here."""

from __future__ import annotations

import inspect
import subprocess
import sys

import click
import pytest

from promptx import Enhancer
from promptx.cli.main import enhance as enhance_command
from promptx.cli.per_call import flag_name
from promptx.diffusers.enhance import ENHANCE_OPTIONS, ENHANCER_OPTIONS, split_options
from promptx.errors import InvalidInputError
from promptx.options import (
    CLI,
    HTTP,
    MAX_NEW_TOKENS_RANGE,
    MAX_SEED,
    NAMES,
    PIPELINE,
    STRENGTHS,
    TEMPERATURE_RANGE,
    EnhanceOptions,
    choices,
    travelling,
    value_range,
)
from promptx.serve.schemas import EnhanceBody

DECLARED = EnhanceOptions.model_fields
# the options that stay in a Python call: a server or a command line has no such objects to give
NOT_OVER_HTTP = {"speculative", "system_prompt", "constrain", "encoder_counter"}


def test_the_ways_each_option_travels():
    assert set(travelling(HTTP)) == set(NAMES) - NOT_OVER_HTTP
    assert set(travelling(CLI)) == set(NAMES) - {"speculative", "constrain", "encoder_counter"}
    assert set(travelling(PIPELINE)) == set(NAMES) - {"image", "encoder_counter"}
    assert value_range("seed") == (0, MAX_SEED) and value_range("temperature") == TEMPERATURE_RANGE
    assert (
        value_range("max_new_tokens") == MAX_NEW_TOKENS_RANGE and choices("strength") == STRENGTHS
    )


def test_the_serve_body_has_the_options_that_travel_over_http():
    assert list(EnhanceBody.model_fields) == ["prompt", "target", *travelling(HTTP)]
    assert not NOT_OVER_HTTP & set(EnhanceBody.model_fields)
    for name in travelling(HTTP):
        field, declared = EnhanceBody.model_fields[name], DECLARED[name]
        if name == "image":  # the file in base64
            assert field.annotation == str | None and field.default is None
            continue
        assert (field.annotation, field.default, field.metadata) == (
            declared.annotation,
            declared.default,
            declared.metadata,
        ), name
        assert field.description == declared.description
    assert EnhanceBody.model_config["strict"] and EnhanceBody.model_config["extra"] == "forbid"


@pytest.mark.parametrize(
    "body, field",
    [
        ('{"seed": "7"}', "seed"),
        ('{"seed": true}', "seed"),
        ('{"seed": -1}', "seed"),
        (f'{{"seed": {MAX_SEED + 1}}}', "seed"),
        ('{"force": "yes"}', "force"),
        ('{"temperature": "hot"}', "temperature"),
        ('{"temperature": NaN}', "temperature"),
        ('{"max_new_tokens": 0}', "max_new_tokens"),
        ('{"strength": "heavy"}', "strength"),
        ('{"image": 5}', "image"),
        ('{"colour": "red"}', "colour"),
        ('{"system_prompt": "Be brief."}', "system_prompt"),
        ('{"speculative": false}', "speculative"),
    ],
)
def test_the_serve_body_refuses_what_it_refused(body, field):
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as refused:
        EnhanceBody.model_validate_json(body)
    assert [e["loc"] for e in refused.value.errors()] == [(field,)]


def test_every_option_that_travels_by_command_line_is_a_flag_of_enhance():
    flags = {param.name: param for param in enhance_command.params}
    for name in travelling(CLI):
        flag = flags[name]
        assert flag.opts == [flag_name(name)] and flag.help == DECLARED[name].description, name
    per_call = {name for name, param in flags.items() if name in NAMES}
    assert per_call == set(travelling(CLI))


@pytest.mark.parametrize(
    "name, kind",
    [
        ("seed", click.IntRange),
        ("temperature", click.FloatRange),
        ("max_new_tokens", click.IntRange),
    ],
)
def test_the_flags_ranges_are_the_declarations(name, kind):
    flag = next(param for param in enhance_command.params if param.name == name)
    assert isinstance(flag.type, kind) and (flag.type.min, flag.type.max) == value_range(name)
    assert not (flag.type.min_open or flag.type.max_open)


def test_the_flags_kinds_follow_the_declaration():
    flags = {param.name: param for param in enhance_command.params}
    assert tuple(flags["strength"].type.choices) == choices("strength")
    assert flags["force"].is_flag
    assert isinstance(flags["image"].type, click.Path)  # the image: a file on the command line
    assert all(
        flags[name].type is click.STRING
        for name in ("caption", "style", "language", "system_prompt")
    )


def test_a_flag_that_the_declaration_cannot_type_is_refused():
    from promptx.cli.per_call import per_call_option

    with pytest.raises(TypeError, match="--image"):
        per_call_option("image")
    with pytest.raises(TypeError, match="--speculative"):
        per_call_option("speculative")  # None / True / False: no plain flag


def test_the_pipeline_options_are_the_declarations():
    assert ENHANCE_OPTIONS == frozenset(travelling(PIPELINE))
    made_by_enhancer = set(inspect.signature(Enhancer).parameters)
    assert ENHANCER_OPTIONS == made_by_enhancer - ENHANCE_OPTIONS - {"encoder_tokenizer"}
    assert ENHANCER_OPTIONS == {
        "model",
        "backend",
        "templates_dir",
        "drafter",
        "dtype",
        "device",
        "retries",
        "quiet",
        "planner",
        "base_url",
        "vision",
    }
    init, options, batch = split_options(
        {"seed": 3, "strength": "light", "dtype": "float32", "batch_size": 2}
    )
    assert (init, options, batch) == (
        {"dtype": "float32"},
        {"seed": 3, "strength": "light"},
        {"batch_size": 2},
    )
    with pytest.raises(InvalidInputError, match="unknown option encoder_counter"):
        split_options({"encoder_counter": object()})


def test_the_options_import_neither_torch_nor_the_engine():
    code = (
        "import sys, promptx.options; "
        "print(sorted(m for m in ('torch', 'engine') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr


def test_the_server_answers_400_for_what_the_body_refuses():
    pytest.importorskip("fastapi")
    from starlette.testclient import TestClient

    from promptx.serve.app import create_app
    from promptx.serve.state import ServerState

    state = ServerState(enhancer_options={})
    state.enhancer, state.model_name = (
        Enhancer(quiet=True, strength="light"),
        "none",
    )  # light loads no model
    with TestClient(create_app(state)) as client:
        for body, field in (
            ({"seed": "7"}, "seed"),
            ({"seed": True}, "seed"),
            ({"force": "yes"}, "force"),
            ({"system_prompt": "Be brief."}, "system_prompt"),
            ({"language": "xx"}, "language"),
            ({"temperature": 2.5}, "temperature"),
        ):
            answer = client.post("/v1/enhance", json={"prompt": "a cat on a roof", **body})
            assert answer.status_code == 400, (body, answer.text)
            assert (
                answer.json()["error"]["type"] == "invalid_request"
                and field in answer.json()["error"]["message"]
            )
        done = client.post(
            "/v1/enhance",
            json={
                "prompt": "a red fox in snow",
                "seed": 1,
                "temperature": 0,
                "force": True,
                "strength": "light",
            },
        )
        assert done.status_code == 200 and done.json()["text"].startswith("A red fox in snow")
