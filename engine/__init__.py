"""engine: the decoder behind promptx. engine never imports promptx.

Layers, each importing only those below it:

- ``runtime``: the Llama-family model, its layers, KV caches, precisions, devices;
- ``weights``: checkpoints and GGUF files, the tokenizer, the cache folder;
- ``decode``: sampling, stop rules, statistics, the commit step, plain decoding, prefix reuse;
- ``speculative``: drafter, draft trees, lossless verification, the ``Planner`` contract,
  the single-sequence and batched speculative loops;
- ``planning``: the cost-aware harness and its cost tables;
- ``generator``: ``Generator``, the one object that owns a loaded model;
- ``bench`` and ``training`` use the layers above through their public names.

The public names below load lazily: ``import engine`` does not import torch.
"""

from __future__ import annotations

import importlib

_PUBLIC = {
    "Generator": "engine.generator",
    "Transformer": "engine.runtime.model",
    "ModelConfig": "engine.runtime.config",
    "load_model": "engine.weights.loading",
    "ChatTokenizer": "engine.weights.tokenizer",
    "SamplingParams": "engine.decode.sampling",
    "StopChecker": "engine.decode.stopping",
    "DecodeStats": "engine.decode.stats",
    "commit_tokens": "engine.decode.commit",
    "decode_autoregressive": "engine.decode.autoregressive",
    "Drafter": "engine.speculative.drafter",
    "load_drafter": "engine.speculative.checkpoint",
    "save_drafter": "engine.speculative.checkpoint",
    "Planner": "engine.speculative.planner",
    "TreeConfig": "engine.speculative.planner",
    "FixedTree": "engine.speculative.loop",
    "decode_speculative": "engine.speculative.loop",
    "decode_speculative_batch": "engine.speculative.batch",
    "Harness": "engine.planning.harness",
    "CostTable": "engine.planning.cost_table",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    if name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'engine' has no attribute {name!r}")
