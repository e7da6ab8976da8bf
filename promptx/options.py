"""The per-call options of an enhancement, declared once: the fields of ``EnhanceOptions``.

``EnhanceOptions`` is what ``promptx.enhance``, ``Enhancer.enhance`` / ``enhance_many`` /
``stream``, the CLI, ``promptx serve``, batch files, Ray and the diffusers wrapper pass on. Each
option is one field: its type, default, range (``ge``/``le``), choices (``Literal``) and help
(``description``), and where it travels besides a Python call (``OptionSpec``). The other
declarations are made from these fields: ``promptx serve``'s request body (``serve.schemas``),
the ``promptx enhance`` flags (``cli.per_call``) and the diffusers wrapper's option names
(``diffusers.enhance``). Values are checked when the options are made (types and ranges that
need no profile): a bad value is an ``InvalidInputError`` naming the field, an unknown option
one naming the known ones.

Not here: what depends on the target profile (a style's name, the profile's default temperature
and budget: ``promptx.request``), generation settings for a backend
(``promptx.backends.base.GenerationOptions``).
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Mapping, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import InvalidInputError
from .profiles.render import renders_language


#: the largest seed: retries use the next seeds, and the samplers take 63-bit seeds
MAX_SEED = 2**62
#: the ranges of the numeric options
TEMPERATURE_RANGE = (0.0, 2.0)
MAX_NEW_TOKENS_RANGE = (1, 4096)

#: how much an enhancement adds: "light" the user's words and vetted phrases chosen without the
#: model; "medium" vetted phrases ranked by the model's likelihood; "full" free prose by the model
STRENGTHS = ("light", "medium", "full")

#: the ways an option travels besides a Python call: a flag of ``promptx enhance``, a field of
#: ``promptx serve``'s ``/v1/enhance`` body, an option of the diffusers wrapper (``enhance_for``)
CLI, HTTP, PIPELINE = "cli", "http", "pipeline"
EVERYWHERE = frozenset({CLI, HTTP, PIPELINE})


@dataclass(frozen=True)
class OptionSpec:
    """A field's metadata beyond pydantic's: ``via``, the ways the option travels (a field without
    an ``OptionSpec`` goes everywhere); ``problem``, what a bad value is told where the type and
    range alone do not say it well ("must be ...")."""

    via: frozenset[str] = EVERYWHERE
    problem: str | None = None


def travels(*ways: str) -> OptionSpec:
    """The ``OptionSpec`` of an option that travels only ``ways`` (none: only in a Python call)."""
    return OptionSpec(via=frozenset(ways))


class EnhanceOptions(BaseModel):
    """The options of one enhancement, checked when made (``InvalidInputError``); frozen."""

    # the checks are built at the first options made: a command that only reads the fields starts
    # sooner
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, defer_build=True)

    # a path, bytes or PIL image grounding i2v / i2i targets (over HTTP: base64; a pipeline's comes
    # from its call)
    image: Annotated[Any, travels(CLI, HTTP)] = Field(
        None, description="Input image (image-to-video, image-to-image)."
    )
    caption: str | None = Field(None, description="A description of the input image.")
    seed: Annotated[
        int | None, OptionSpec(problem=f"must be a non-negative integer up to {MAX_SEED}")
    ] = Field(None, ge=0, le=MAX_SEED, description="Seed for reproducible output.")
    # None: the profile's temperature and budget
    temperature: float | None = Field(
        None,
        ge=TEMPERATURE_RANGE[0],
        le=TEMPERATURE_RANGE[1],
        description="Sampling temperature (0 = greedy).",
    )
    max_new_tokens: int | None = Field(
        None,
        ge=MAX_NEW_TOKENS_RANGE[0],
        le=MAX_NEW_TOKENS_RANGE[1],
        description="Generation budget in tokens.",
    )
    style: str | None = Field(
        None, description="Style preset of the profile (e.g. cinematic, anime, photographic)."
    )
    # None: the profile's policy; a language's name ("german") is fine too
    language: str | None = Field(None, description="Output language: en, keep, or a language code.")
    force: bool = Field(
        False,
        description="Enhance even prompts that are already long, or in a language the model "
        "does not read.",
    )
    # the command line's --no-speculative sets the Enhancer's
    speculative: Annotated[bool | None, travels(PIPELINE)] = Field(
        None, description="Decode with speculation (None: the Enhancer's setting)."
    )
    system_prompt: Annotated[str | None, travels(CLI, PIPELINE)] = Field(
        None, description="Replace the profile's system prompt."
    )
    constrain: Annotated[bool, travels(PIPELINE)] = Field(
        True, description="Decode with the constraint that keeps the prompt's subject."
    )
    # e.g. a pipeline's tokenizer (the diffusers wrapper gives its own; the command line:
    # --encoder-tokenizer)
    encoder_counter: Annotated[Any, travels()] = Field(
        None, description="What counts the text-encoder budget."
    )
    strength: Literal[STRENGTHS] | None = Field(
        None,
        description="light: your words plus vetted phrases (no model needed; the embedded "
        "model's default); medium: vetted phrases ranked by the model; full: free prose by the "
        "model (the default for other models).",
    )

    def __init__(self, **options: Any) -> None:
        try:
            super().__init__(**options)
        except ValidationError as error:
            raise _invalid(error) from None

    @field_validator("language", mode="before")  # before the type: 5 is an unknown language too
    @classmethod
    def _known_language(cls, language: Any) -> Any:
        if language is not None and not (isinstance(language, str) and renders_language(language)):
            raise InvalidInputError(
                f"unknown language {language!r}; use 'en', 'keep', a language code "
                "such as 'es' or 'pt-BR', or a language's name ('german')"
            )
        return language

    @classmethod
    def of(cls, options: Mapping[str, Any]) -> "EnhanceOptions":
        """Options from a mapping of keyword arguments; unknown names are refused."""
        return cls(**_known(options))

    def with_defaults(self, **defaults: Any) -> "EnhanceOptions":
        """These options with each of ``defaults`` filled in where the caller left it None."""
        filled = {
            name: value for name, value in _known(defaults).items() if getattr(self, name) is None
        }
        return type(self)(**{**dict(self), **filled})


NAMES = tuple(EnhanceOptions.model_fields)


def travelling(via: str) -> tuple[str, ...]:
    """The names of the options that travel ``via`` (``CLI``, ``HTTP`` or ``PIPELINE``), in
    order."""
    return tuple(name for name in NAMES if via in _spec(name).via)


def value_range(name: str) -> tuple[Any, Any] | None:
    """(lowest, highest) allowed value of the option ``name``; None where it declares no range."""
    metadata = EnhanceOptions.model_fields[name].metadata
    low = next((m.ge for m in metadata if hasattr(m, "ge")), None)
    high = next((m.le for m in metadata if hasattr(m, "le")), None)
    return None if low is None and high is None else (low, high)


def choices(name: str) -> tuple[str, ...] | None:
    """The values the option ``name`` may take (besides None); None where any of its type goes."""
    literal = [kind for kind in _kinds(name) if get_origin(kind) is Literal]
    return get_args(literal[0]) if literal else None


def value_type(name: str) -> Any:
    """The type of the option ``name``'s values, None aside (``str`` for a choice, ``Any`` for
    any)."""
    kinds = _kinds(name)
    if len(kinds) != 1:
        return Any
    return str if get_origin(kinds[0]) is Literal else kinds[0]


def _kinds(name: str) -> list[Any]:
    annotation = EnhanceOptions.model_fields[name].annotation
    if get_origin(annotation) in (Union, types.UnionType):
        return [kind for kind in get_args(annotation) if kind is not type(None)]
    return [annotation]


def _spec(name: str) -> OptionSpec:
    return next(
        (m for m in EnhanceOptions.model_fields[name].metadata if isinstance(m, OptionSpec)),
        OptionSpec(),
    )


def _known(options: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(options) - set(NAMES), key=str)
    if unknown:
        raise _unknown(unknown)
    return dict(options)


def _unknown(names: list) -> InvalidInputError:
    return InvalidInputError(
        f"unknown option{'s' if len(names) > 1 else ''} {', '.join(map(repr, names))}; "
        f"the options are: {', '.join(NAMES)}"
    )


def _invalid(error: ValidationError) -> InvalidInputError:
    """The ``InvalidInputError`` of pydantic's first complaint, in promptx's words."""
    problems = error.errors()
    unknown = sorted((p["loc"][0] for p in problems if p["type"] == "extra_forbidden"), key=str)
    if unknown:
        return _unknown(unknown)
    first = problems[0]
    cause = (first.get("ctx") or {}).get("error")
    if isinstance(cause, InvalidInputError):  # a validator's own message
        return cause
    name = first["loc"][0]
    return InvalidInputError(f"{name} {_problem(name, first['input'])}")


def _problem(name: str, value: Any) -> str:
    """What is wrong with ``value`` for the option ``name``, from its declaration: "must be ..."."""
    declared = _spec(name).problem
    if declared:
        return declared
    span, allowed, kind = value_range(name), choices(name), value_type(name)
    if span is not None:
        return f"must be between {_number(span[0])} and {_number(span[1])}"
    if allowed is not None:
        return f"must be one of {', '.join(allowed)}, not {value!r}"
    if kind is bool:
        return f"must be true or false, not {value!r}"
    if kind is str:
        return "must be a string"
    return f"cannot be {value!r}"


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
