"""The JSON bodies ``promptx serve`` accepts: promptx's own ``/v1/enhance`` request and the
OpenAI chat-completions request (the fields promptx uses; others are accepted and ignored).

Not here: what is done with them (``serve.app``), limits on their size (``serve.limits``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..options import MAX_NEW_TOKENS_RANGE, MAX_SEED, STRENGTHS, TEMPERATURE_RANGE


class EnhanceBody(BaseModel):
    """``POST /v1/enhance``: what ``promptx.enhance`` takes, with the image as base64. Types are
    strict: ``"seed": "7"``, ``"seed": true`` and ``"force": "yes"`` are refused, not converted."""

    model_config = ConfigDict(extra="forbid", strict=True)

    prompt: str | None = None
    target: str = "video"
    image: str | None = Field(default=None, description="the input image file, base64 (a data: URL is fine)")
    caption: str | None = None
    seed: int | None = Field(default=None, ge=0, le=MAX_SEED)
    temperature: float | None = Field(default=None, ge=TEMPERATURE_RANGE[0], le=TEMPERATURE_RANGE[1])
    max_new_tokens: int | None = Field(default=None, ge=MAX_NEW_TOKENS_RANGE[0], le=MAX_NEW_TOKENS_RANGE[1])
    style: str | None = None
    language: str | None = None
    force: bool = False
    strength: Literal[STRENGTHS] | None = Field(
        default=None, description="light / medium: vetted phrases; full: free prose; None: the server's default")


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
