"""A tiny random Llama-family target for fast engine tests (no model files needed)."""

from __future__ import annotations

import torch

from engine.runtime.config import ModelConfig
from engine.runtime.model import Transformer
from engine.speculative.drafter import Drafter, DrafterConfig

TINY_CONFIG = ModelConfig(
    model_type="llama",
    vocab_size=128,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=6,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    max_position_embeddings=256,
)


def make_tiny_target(seed: int = 0, cfg: ModelConfig = TINY_CONFIG) -> Transformer:
    """Random weights large enough to give peaked, seed-dependent distributions."""
    torch.manual_seed(seed)
    model = Transformer(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.2) if p.dim() > 1 else p.uniform_(0.5, 1.5)
    return model.eval()


def make_tiny_drafter(target, seed: int = 1, **overrides) -> Drafter:
    """A random drafter attached to ``target`` (norms not all ones; reduced vocab / low-rank head as
    asked)."""
    torch.manual_seed(seed)
    drafter = Drafter(DrafterConfig.for_target(target.config, **overrides))
    with torch.no_grad():
        for name, p in drafter.named_parameters():
            if p.dim() == 1:
                p.uniform_(0.5, 1.5)  # norms: not all ones, so a mixed-up norm shows
    if drafter.d2t is not None:
        drafter.set_vocab_map(
            torch.randperm(target.config.vocab_size)[: drafter.config.draft_vocab_size]
            .sort()
            .values
        )
    drafter.attach(target)
    if drafter.config.lowrank_rank is not None:
        drafter.init_lowrank_from_head()
    return drafter.eval()
