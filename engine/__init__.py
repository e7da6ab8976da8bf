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

The public names below load lazily: ``import engine`` does not import torch. promptx
uses the engine through these names and ``engine.bench``'s only (tools/check_layers.py).
"""

from __future__ import annotations

import importlib

_PUBLIC = {
    # loading and running a model
    "Generator": "engine.generator",
    "ContextOverflowError": "engine.generator",
    "Transformer": "engine.runtime.model",
    "Runner": "engine.runtime.runner",
    "build_runner": "engine.runtime.runner",
    "ModelConfig": "engine.runtime.config",
    "default_device": "engine.runtime.device",
    "fastest_dtype": "engine.runtime.device",
    "cpu_has_fast_bf16": "engine.runtime.device",
    "load_model": "engine.weights.loading",
    "convert_gguf": "engine.weights.gguf_convert",
    "GGUFConversionError": "engine.weights.gguf_convert",
    "ChatTokenizer": "engine.weights.tokenizer",
    "IncrementalDecoder": "engine.weights.tokenizer",
    "progress_bar": "engine.progress",
    # decoding
    "SamplingParams": "engine.decode.sampling",
    "TokenMask": "engine.decode.sampling",
    "StopChecker": "engine.decode.stopping",
    "DecodeStats": "engine.decode.stats",
    "ScoringGroup": "engine.decode.scoring",
    "commit_tokens": "engine.decode.commit",
    "decode_autoregressive": "engine.decode.autoregressive",
    # speculation
    "Drafter": "engine.speculative.drafter",
    "load_drafter": "engine.speculative.checkpoint",
    "save_drafter": "engine.speculative.checkpoint",
    "read_fingerprint": "engine.speculative.checkpoint",
    "target_fingerprint": "engine.speculative.checkpoint",
    "DrafterLoadError": "engine.speculative.checkpoint",
    "DrafterMismatchError": "engine.speculative.checkpoint",
    "export_drafter": "engine.speculative.export",
    "check_declared_taps": "engine.speculative.export",
    "default_taps": "engine.speculative.export",
    "ExportError": "engine.speculative.export",
    "COPY_TABLE": "engine.speculative.copy_draft",
    "CopyDrafter": "engine.speculative.copy_draft",
    "CopyTableError": "engine.speculative.copy_draft",
    "CopyTableMismatch": "engine.speculative.copy_draft",
    "NgramTable": "engine.speculative.copy_draft",
    "Planner": "engine.speculative.planner",
    "TreeConfig": "engine.speculative.planner",
    "FixedTree": "engine.speculative.loop",
    "decode_speculative": "engine.speculative.loop",
    "decode_speculative_batch": "engine.speculative.batch",
    # planning
    "Harness": "engine.planning.harness",
    "CostTable": "engine.planning.cost_table",
    "table_path": "engine.planning.cost_table",
    "calibrate": "engine.planning.calibrate",
    "FULL_GRID": "engine.planning.calibrate",
    "QUICK_GRID": "engine.planning.calibrate",
    # training (drafters and adapters)
    "GenerationItem": "engine.training.data",
    "Record": "engine.training.data",
    "generate_dataset": "engine.training.data",
    "read_records": "engine.training.data",
    "split_records": "engine.training.data",
    "TrainConfig": "engine.training.train",
    "build_drafter": "engine.training.train",
    "train_drafter": "engine.training.train",
    "warm_start": "engine.training.train",
    "measure_tau": "engine.training.train",
    "lowrank_stage": "engine.training.lowrank",
    "SFTConfig": "engine.training.sft",
    "train_lora": "engine.training.sft",
    "AdapterError": "engine.training.lora",
    "AdapterInfo": "engine.training.lora",
    "apply_adapter_to_dir": "engine.training.lora",
    "attach_lora": "engine.training.lora",
    "read_adapter_note": "engine.training.lora",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    if name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'engine' has no attribute {name!r}")
