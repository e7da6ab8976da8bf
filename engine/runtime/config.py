"""Model configuration for the Llama-family runtime.

A checked dataclass read from a Hugging Face ``config.json`` dict. It covers
Llama, Mistral, Qwen2 (qkv bias) and Qwen3 (q/k RMSNorm). It is not a loader:
see ``engine.weights.loading`` for files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

SUPPORTED_MODEL_TYPES = ("llama", "mistral", "qwen2", "qwen3")


class ConfigError(ValueError):
    """A model config is missing fields or describes an unsupported model."""


@dataclass(frozen=True)
class ModelConfig:
    model_type: str
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    max_position_embeddings: int = 2048
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    qk_norm: bool = False
    sliding_window: int | None = None
    bos_token_id: int | None = None
    eos_token_ids: tuple[int, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.model_type not in SUPPORTED_MODEL_TYPES:
            raise ConfigError(
                f"unsupported model_type {self.model_type!r}; "
                f"supported: {', '.join(SUPPORTED_MODEL_TYPES)}"
            )
        if self.num_attention_heads % self.num_key_value_heads:
            raise ConfigError("num_attention_heads must be a multiple of num_key_value_heads")

    @property
    def tap_layers(self) -> tuple[int, int, int]:
        """Layers whose *input* residual stream feeds the drafter (EAGLE-3)."""
        n = self.num_hidden_layers
        return (2, n // 2, n - 3)

    @classmethod
    def from_dict(cls, raw: dict) -> "ModelConfig":
        try:
            model_type = raw.get("model_type", "llama")
            heads = int(raw["num_attention_heads"])
            hidden = int(raw["hidden_size"])
            eos = raw.get("eos_token_id")
            eos_ids = tuple(eos) if isinstance(eos, list) else ((eos,) if eos is not None else ())
            rope = raw.get("rope_theta")
            if rope is None:
                rope = (raw.get("rope_parameters") or {}).get("rope_theta", 10000.0)
            return cls(
                model_type=model_type,
                vocab_size=int(raw["vocab_size"]),
                hidden_size=hidden,
                intermediate_size=int(raw["intermediate_size"]),
                num_hidden_layers=int(raw["num_hidden_layers"]),
                num_attention_heads=heads,
                num_key_value_heads=int(raw.get("num_key_value_heads") or heads),
                head_dim=int(raw.get("head_dim") or hidden // heads),
                max_position_embeddings=int(raw.get("max_position_embeddings", 2048)),
                rms_norm_eps=float(raw.get("rms_norm_eps", 1e-5)),
                rope_theta=float(rope),
                tie_word_embeddings=bool(raw.get("tie_word_embeddings", False)),
                attention_bias=bool(raw.get("attention_bias", model_type == "qwen2")),
                qk_norm=model_type == "qwen3",
                sliding_window=raw.get("sliding_window") if raw.get("use_sliding_window") else None,
                bos_token_id=raw.get("bos_token_id"),
                eos_token_ids=eos_ids,
            )
        except KeyError as exc:
            raise ConfigError(f"model config lacks the field {exc.args[0]!r}") from None

    @classmethod
    def from_file(cls, path: str | Path) -> "ModelConfig":
        return cls.from_dict(json.loads(Path(path).read_text()))
