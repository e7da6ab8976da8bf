"""The result types returned by ``enhance``: the enhanced prompt and its statistics."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from .quality.assessment import Assessment


class EnhanceStats(BaseModel):
    """How the text was produced. Token counts are of the enhancer's own model."""

    model_config = ConfigDict(extra="forbid")

    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    tokens_per_s: float = 0.0
    attempts: int = 0
    speculative: bool = False
    acceptance_length: float | None = Field(
        default=None, description="tokens per target forward pass (tau); None without speculation"
    )
    backend: str = ""
    model: str = ""
    encoder_tokens: int | None = Field(
        default=None, description="tokens the target's text encoder makes of the text (no BOS/EOS)"
    )
    encoder_counter: str | None = Field(
        default=None,
        description='what counted them: "clip-bpe", "tokenizer:DIR", "pipeline:tokenizer_N" or '
        '"estimate"; None for a profile without an encoder',
    )


class EnhancedPrompt(BaseModel):
    """An enhanced prompt. ``str(result)`` is the text, ready for a diffusers pipeline."""

    model_config = ConfigDict(extra="forbid")

    text: str
    negative_prompt: str = ""
    target: str
    template: str
    task: str
    original_prompt: str
    language: str
    style: str | None = None
    fallback: bool = False
    skipped: bool = False
    reason: str | None = None
    stats: EnhanceStats = Field(default_factory=EnhanceStats)
    strength: str = Field(
        default="full", description='"light", "medium" (vetted phrases) or "full" (free prose)'
    )
    added: dict[str, str] = Field(
        default_factory=dict,
        description="what a light or medium enhancement added, part by part "
        "(appearance, light, camera, ...); empty for free prose",
    )
    assessment: Assessment | None = Field(
        default=None,
        description="faithfulness of the model's last output (of the fallback's rejected one)",
    )

    def __str__(self) -> str:
        return self.text
