"""The schema of a target profile: what one ``templates/*.toml`` file holds.

A profile says how to rewrite a short prompt for one generator (Wan, FLUX,
SDXL, ...): the system prompt, few-shot examples, word budget, style presets
and sampling settings. This module only validates data (pydantic v2). It does
not read files (``profiles.registry``) and does not build chat messages
(``profiles.render``); it never imports torch.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from promptx.text.language import count_words  # noqa: F401  (re-exported: templates' lengths)

__all__ = [
    "PLACEHOLDERS",
    "PLACEHOLDER_TOKEN",
    "Example",
    "LengthBudget",
    "Profile",
    "count_words",
    "template_placeholders",
]

#: The only names a system prompt or user template may use as ``{name}``.
PLACEHOLDERS = frozenset(
    {
        "prompt",
        "min_words",
        "max_words",
        "style",
        "language_rule",
        "image",
        "generator",
        "description",
    }
)

#: One token of a template: an escaped brace (``{{``/``}}``) or a ``{name}``.
PLACEHOLDER_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")

_NAME = r"^[a-z0-9][a-z0-9._-]*$"


def template_placeholders(text: str) -> set[str]:
    """Return the placeholder names ``text`` uses.

    Raises ValueError for a name outside PLACEHOLDERS (``{foo}``,
    ``{prompt.__class__}``) or a stray brace; ``{{`` and ``}}`` are literal.
    """
    names: set[str] = set()
    for match in PLACEHOLDER_TOKEN.finditer(text):
        name = match.group(1)
        if name is None:
            continue
        if name not in PLACEHOLDERS:
            allowed = ", ".join("{%s}" % n for n in sorted(PLACEHOLDERS))
            raise ValueError(f"unknown placeholder {{{name}}}; allowed: {allowed}")
        names.add(name)
    if re.search(r"[{}]", PLACEHOLDER_TOKEN.sub("", text)):
        raise ValueError("unbalanced '{' or '}'; write {{ or }} for a literal brace")
    return names


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, str_strip_whitespace=True, frozen=True)


class Example(_Strict):
    """One few-shot pair: a short user prompt and the wanted rewrite."""

    input: str = Field(min_length=1)
    output: str = Field(min_length=1)
    #: For i2v/i2i profiles: a short description of the input image.
    image: str | None = None


class LengthBudget(_Strict):
    """How long the rewrite should be, and the text encoder that bounds it."""

    min_words: int = Field(gt=0)
    max_words: int = Field(gt=0)
    encoder: str | None = None  # e.g. "clip-l", "t5-xxl", "umt5-xxl", "llama"
    max_encoder_tokens: int | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _ordered(self) -> LengthBudget:
        if self.min_words > self.max_words:
            raise ValueError(
                f"min_words ({self.min_words}) must not exceed max_words ({self.max_words})"
            )
        return self


#: the parts a structured enhancement may say (``promptx.compose``; templates/phrases/README.md)
COMPOSE_PARTS = (
    "prompt",
    "appearance",
    "setting",
    "background",
    "action",
    "motion",
    "ambient",
    "light",
    "style",
    "camera",
    "shot",
    "composition",
    "keep",
    "quality_tags",
)


class ComposeLayout(_Strict):
    """How a structured enhancement is laid out for this target: its parts, in order (the
    user's words are the part "prompt"; a part the prompt already says is left out)."""

    parts: list[str] = Field(min_length=2)

    @field_validator("parts")
    @classmethod
    def _known_parts(cls, value: list[str]) -> list[str]:
        unknown = [p for p in value if p not in COMPOSE_PARTS]
        if unknown or "prompt" not in value or len(set(value)) != len(value):
            raise ValueError(
                f'parts must name "prompt" and other parts once each, from: '
                f"{', '.join(COMPOSE_PARTS)} (unknown: {', '.join(unknown) or 'none'})"
            )
        return value


class Profile(_Strict):
    """Everything needed to enhance prompts for one target generator."""

    name: str = Field(pattern=_NAME)
    task: Literal["t2i", "t2v", "i2v", "i2i"]
    generator: str = Field(min_length=1)
    description: str = Field(min_length=1)
    aliases: list[str] = []
    format: Literal["paragraph", "tags", "instruction"]
    system_prompt: str = Field(min_length=1)
    user_template: str = "{prompt}"
    examples: list[Example] = Field(min_length=1)
    length: LengthBudget
    language: Literal["keep", "english"]
    negative_prompt: str = ""
    styles: dict[str, str] = {}
    default_style: str | None = None
    enhance_threshold_words: int = Field(gt=0)
    max_new_tokens: int = Field(gt=0)
    temperature: float = Field(default=0.7, ge=0.0, le=2.0)
    top_p: float = Field(default=0.9, gt=0.0, le=1.0)
    repetition_penalty: float = Field(default=1.1, ge=1.0, le=2.0)
    #: "prompt": the answer starts with the user's own words, which the model continues
    #: (keeps the subject where a small model would drift); "frame": it starts with them framed
    #: ("A picture of bond", "The number 42"; t2i and t2v); "free": the model starts it
    opening: Literal["free", "prompt", "frame"] = "free"
    #: what a model that sees the input image is told (i2v/i2i); None: the task's default
    #: (``promptx.profiles.render.VISION_GUIDANCE``)
    vision_guidance: str | None = None
    #: the structured layout (``strength`` light/medium); None: this target has free prose only
    compose: ComposeLayout | None = None

    @property
    def wants_image(self) -> bool:
        """True when the target takes an input image (i2v, i2i)."""
        return self.task in ("i2v", "i2i")

    def should_enhance(self, prompt: str, *, force: bool = False) -> bool:
        """False when ``prompt`` is already longer than enhance_threshold_words."""
        return force or count_words(prompt) <= self.enhance_threshold_words

    @field_validator("aliases")
    @classmethod
    def _aliases(cls, value: list[str]) -> list[str]:
        lowered = [a.strip().lower() for a in value]
        for alias in lowered:
            if not re.match(_NAME, alias):
                raise ValueError(f"alias {alias!r} must match {_NAME}")
        dupes = sorted({a for a in lowered if lowered.count(a) > 1})
        if dupes:
            raise ValueError(f"duplicate alias {', '.join(dupes)}")
        return lowered

    @field_validator("styles")
    @classmethod
    def _styles(cls, value: dict[str, str]) -> dict[str, str]:
        for key, guidance in value.items():
            if not re.match(r"^[a-z0-9][a-z0-9_-]*$", key):
                raise ValueError(f"style name {key!r} must be lowercase letters, digits, - or _")
            if not guidance.strip():
                raise ValueError(f"style {key!r} has empty guidance")
        return value

    @field_validator("system_prompt", "user_template")
    @classmethod
    def _placeholders(cls, value: str) -> str:
        template_placeholders(value)
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Profile:
        problems: list[str] = []
        if self.name in self.aliases:
            problems.append(f"aliases: {self.name!r} is the profile's own name")
        if self.default_style is not None and self.default_style not in self.styles:
            known = ", ".join(sorted(self.styles)) or "none defined"
            problems.append(f"default_style: {self.default_style!r} is not a style ({known})")
        if (self.task == "i2i") != (self.format == "instruction"):
            problems.append("format: i2i profiles use format 'instruction', and only they do")
        used = template_placeholders(self.user_template)
        if "prompt" not in used:
            problems.append("user_template: must contain {prompt}")
        if self.wants_image and "image" not in used:
            problems.append(f"user_template: a {self.task} profile must contain {{image}}")
        budget = self.length
        if self.enhance_threshold_words >= budget.max_words:
            problems.append(
                f"enhance_threshold_words: {self.enhance_threshold_words} must be below "
                f"length.max_words ({budget.max_words})"
            )
        if self.max_new_tokens < budget.max_words:
            problems.append(
                f"max_new_tokens: {self.max_new_tokens} cannot fit length.max_words "
                f"({budget.max_words}); allow about 1.6 tokens per word"
            )
        for i, ex in enumerate(self.examples):
            n = count_words(ex.output)
            if not budget.min_words <= n <= budget.max_words:
                problems.append(
                    f"examples.{i}.output: {n} words, outside length "
                    f"{budget.min_words}-{budget.max_words}"
                )
            if self.wants_image and not ex.image:
                problems.append(f"examples.{i}.image: required for a {self.task} profile")
            if not self.wants_image and ex.image:
                problems.append(f"examples.{i}.image: a {self.task} profile takes no image")
        if problems:
            raise ValueError("; ".join(problems))
        return self
