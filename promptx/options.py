"""The per-call options of an enhancement, named and checked in one place.

``EnhanceOptions`` is what ``promptx.enhance``, ``Enhancer.enhance`` /
``enhance_many`` / ``stream``, the CLI, ``promptx serve``, batch files, Ray and
the diffusers wrapper pass on: every option is a field here, checked once
(types and ranges that need no profile), and an unknown option is an
``InvalidInputError`` naming the known ones. Not here: what depends on the
target profile (a style's name, the profile's default temperature and budget:
``promptx.request``), generation settings for a backend
(``promptx.backends.base.GenerationOptions``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Mapping

from .errors import InvalidInputError
from .profiles.render import renders_language


#: the largest seed: retries use the next seeds, and the samplers take 63-bit seeds
MAX_SEED = 2**62
#: the ranges of the numeric options (also the CLI's and ``promptx serve``'s)
TEMPERATURE_RANGE = (0.0, 2.0)
MAX_NEW_TOKENS_RANGE = (1, 4096)

#: how much an enhancement adds: "light" the user's words and vetted phrases chosen without the
#: model; "medium" vetted phrases ranked by the model's likelihood; "full" free prose by the model
STRENGTHS = ("light", "medium", "full")


@dataclass(frozen=True)
class EnhanceOptions:
    image: Any = None                 # path, bytes or PIL image grounding i2v / i2i targets
    caption: str | None = None        # what the image shows, in words
    seed: int | None = None           # makes the output reproducible
    temperature: float | None = None  # None: the profile's
    max_new_tokens: int | None = None  # None: the profile's
    style: str | None = None          # one of the profile's styles
    language: str | None = None       # "en", "keep" or a language code; None: the profile's policy
    force: bool = False               # enhance even a long prompt, or one in a language the model cannot read
    speculative: bool | None = None   # None: the Enhancer's setting
    system_prompt: str | None = None  # replaces the profile's system prompt
    constrain: bool = True            # the decoding constraint that keeps the subject
    encoder_counter: Any = None       # counts the text-encoder budget (e.g. a pipeline's tokenizer)
    strength: str | None = None       # "light", "medium" or "full"; None: the backend's default

    def __post_init__(self) -> None:
        if self.caption is not None and not isinstance(self.caption, str):
            raise InvalidInputError("caption must be a string")
        low, high = TEMPERATURE_RANGE
        if self.temperature is not None and not (_is_number(self.temperature) and low <= self.temperature <= high):
            raise InvalidInputError(f"temperature must be between {low:g} and {high:g}")
        low, high = MAX_NEW_TOKENS_RANGE
        if self.max_new_tokens is not None and not (_is_int(self.max_new_tokens) and low <= self.max_new_tokens <= high):
            raise InvalidInputError(f"max_new_tokens must be between {low} and {high}")
        if self.seed is not None and not (_is_int(self.seed) and 0 <= self.seed <= MAX_SEED):
            raise InvalidInputError(f"seed must be a non-negative integer up to {MAX_SEED}")
        if self.style is not None and not isinstance(self.style, str):
            raise InvalidInputError("style must be a string")
        if self.system_prompt is not None and not isinstance(self.system_prompt, str):
            raise InvalidInputError("system_prompt must be a string")
        if self.language is not None and not (isinstance(self.language, str) and renders_language(self.language)):
            raise InvalidInputError(f"unknown language {self.language!r}; use 'en', 'keep', a language code "
                                    "such as 'es' or 'pt-BR', or a language's name ('german')")
        for name in ("force", "constrain", "speculative"):
            value = getattr(self, name)
            if not isinstance(value, bool) and not (value is None and name == "speculative"):
                raise InvalidInputError(f"{name} must be true or false, not {value!r}")
        if self.strength is not None and self.strength not in STRENGTHS:
            raise InvalidInputError(f"strength must be one of {', '.join(STRENGTHS)}, not {self.strength!r}")

    @classmethod
    def of(cls, options: Mapping[str, Any]) -> "EnhanceOptions":
        """Options from a mapping of keyword arguments; unknown names are refused."""
        return cls(**_known(options))

    def with_defaults(self, **defaults: Any) -> "EnhanceOptions":
        """These options with each of ``defaults`` filled in where the caller left it None."""
        return replace(self, **{k: v for k, v in _known(defaults).items() if getattr(self, k) is None})


NAMES = tuple(f.name for f in fields(EnhanceOptions))


def _known(options: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(options) - set(NAMES))
    if unknown:
        raise InvalidInputError(f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
                                f"the options are: {', '.join(NAMES)}")
    return dict(options)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
