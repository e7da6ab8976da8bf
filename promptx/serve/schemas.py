"""The JSON bodies ``promptx serve`` accepts: promptx's own ``/v1/enhance`` request and the
OpenAI chat-completions request (the fields promptx uses; others are accepted and ignored).

``EnhanceBody`` is made from the one declaration of the per-call options
(``promptx.options.EnhanceOptions``): its option fields are the options that travel over HTTP,
with their types, ranges and help. Not here: what is done with the bodies (``serve.app``),
limits on their size (``serve.limits``).
"""

from __future__ import annotations

from copy import copy
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from ..options import HTTP, EnhanceOptions, travelling

#: the options whose JSON form is not their Python type: (annotation, field) in the body
_AS_JSON = {
    "image": (
        str | None,
        Field(default=None, description="the input image file, base64 (a data: URL is fine)"),
    )
}


class _EnhanceRequest(BaseModel):
    """What ``POST /v1/enhance`` takes besides the options."""

    model_config = ConfigDict(extra="forbid", strict=True)

    prompt: str | None = None
    target: str = "video"


def _option_fields() -> dict[str, tuple[Any, Any]]:
    """The body's field of each option that travels over HTTP, in the declaration's order."""
    declared = EnhanceOptions.model_fields
    return {
        name: _AS_JSON.get(name) or (declared[name].annotation, copy(declared[name]))
        for name in travelling(HTTP)
    }


EnhanceBody = create_model(
    "EnhanceBody",
    __base__=_EnhanceRequest,
    __module__=__name__,
    **_option_fields(),
    __doc__=(
        "``POST /v1/enhance``: what ``promptx.enhance`` takes, with the image as base64. "
        'Types are strict: ``"seed": "7"``, ``"seed": true`` and ``"force": "yes"`` are '
        "refused, not converted."
    ),
)


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: Literal["system", "user", "assistant"]
    content: str | list[dict[str, Any]] | None = None


class ChatBody(BaseModel):
    """``POST /v1/chat/completions``. ``repetition_penalty`` is an extension (vLLM's name).
    Types of the fields used are strict, as in ``EnhanceBody``."""

    model_config = ConfigDict(extra="allow", strict=True)

    model: str | None = None
    messages: list[ChatMessage] = Field(min_length=1)
    temperature: float = Field(default=1.0, ge=0, le=2)
    top_p: float = Field(default=1.0, gt=0, le=1)
    max_tokens: int | None = Field(default=None, ge=1, le=4096)
    max_completion_tokens: int | None = Field(default=None, ge=1, le=4096)
    seed: int | None = Field(default=None, ge=0)
    stop: str | list[str] | None = None
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    n: int = Field(default=1, ge=1, le=1)
    repetition_penalty: float = Field(default=1.0, ge=1.0, le=2.0)
