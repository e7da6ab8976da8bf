"""Drafter training (EAGLE-3 recipe scaled to a small target), CPU friendly.

Modules:
- ``data``: self-distillation data. ``generate_dataset`` lets the target answer
  pre-rendered prompts (``GenerationItem``: token ids, sampling parameters,
  stable id, length of the shared chat prefix) in batches, and writes resumable
  shards of ``Record`` (``input_ids`` + ``loss_mask``, 1 = response token).
- ``ttt``: the training-time-test unroll: ``ttt_mask`` (causal over step-0
  keys + the same position of every earlier step), ``ttt_positions`` (step k
  shifted by k), ``ttt_forward``, ``ttt_loss`` (sum_k 0.8^k soft CE over the
  draft vocabulary, response positions only), ``target_features`` (the frozen
  target on the fly, with a ``PrefixCache`` for shared system+examples prefixes).
- ``train``: ``build_drafter`` and ``train_drafter`` (AdamW (0.9, 0.95), warm-up +
  cosine, clip 0.5, seeded, checkpoints + resume, validation tau via
  ``decode_speculative``).
- ``vocab``: the reduced draft vocabulary (most frequent response tokens -> d2t/t2d).
- ``lora``: LoRA layers on the target (``attach_lora``), the adapter file, and merging
  it into weights (in memory or into a Hugging Face directory at prepare time).
- ``sft``: supervised fine-tuning of those adapters (``train_lora``: answer-token loss,
  AdamW, warm-up + cosine, clipping, checkpoints + resume, validation).
- ``checkpoints``: the checkpoint folders both loops write and resume from.
- ``lowrank``: EAGLE-4 stage 2: only the low-rank head trains (forward KL from the
  full head); reports candidate recall.

The prompt side (rendering the templates of all four tasks from
../shared/data/prompts) lives in ``promptx.cli.draft``; engine never imports promptx.

Full CPU pipeline (from the repository root, the embedded SmolLM2-135M-Instruct;
``--model DIR`` picks another target; each command resumes when rerun)::

    promptx draft generate-data --out runs/draft-data --limit 2000 --batch-size 16 --threads 2
    promptx draft train --data runs/draft-data --out runs/drafter --draft-vocab 8192 \\
        --epochs 2 --batch-size 4 --lr 3e-4 --ttt-steps 7 --lowrank-rank 64 \\
        --lowrank-candidates 256 --threads 2
    promptx draft eval --drafter runs/drafter/drafter --prompts 8 --compare --threads 2
    # ship it: copy runs/drafter/drafter/ to promptx/drafters/<name>/ (config.json +
    # model.safetensors)

Before ``promptx draft`` is registered in the main CLI the same commands run as
``python -m promptx.cli.draft generate-data ...``.

Measured smoke runs (float32, ``--threads 1``, this shared 2-core machine under a
load average of ~3.5, i.e. roughly half a core per process):

- Generation, decode steps of the target at a ~600-token context: batch 1
  0.16-0.18 s/step (~6 tokens/s), batch 8 0.38-0.44 s (~16-21 tokens/s), batch 16
  0.64 s (~25 tokens/s); a batch of 16 prompts sharing one prefix produced
  19.5 tokens/s end to end (64 tokens each). A cold prefix (system prompt + few-shot
  examples, ~500 tokens) costs ~5 s once per window of 1024 prompts; 400 rendered
  prompts have 57 distinct prefixes, ~513 prompt tokens on average, ~33 of them
  after the shared prefix. The 8-prompt smoke (8 different prefixes, cap 96 tokens)
  ran at 8.6 tokens/s including those prefixes.
- Training (2 records/step, ~600-token sequences, K = 7, draft vocabulary 2048):
  0.10-0.12 steps/s with cold prefixes; per record ~1.5 s for the target's features
  with a cached prefix (+3-4 s when the prefix is cold) and ~2 s for the drafter's
  unroll forward + backward. Stage 2 (64/256, 30 steps over 4.1k states): 31 s.
- A spot check on 2 real records at lr 1e-3: step-0 accuracy 0 -> 0.5 in 12 steps.

Estimate for the full pipeline above at 1 thread on this machine: data ~2000
prompts x ~160 new tokens at ~15-19 tokens/s (rows leave a batch as they finish)
= 5-6 h; training ~2000 records x 2 epochs x ~4 s (32 prefix entries keep most
prefixes warm) = ~4.5 h (~1000 steps of batch 4 at ~0.07 steps/s) plus ~3 min per
validation (6 prompts x 96 tokens of speculative decoding, every 200 steps); stage 2
~10-15 min. Total ~10-11 h with one thread; an idle machine with 2 threads should
take roughly half. ``--limit 1000 --epochs 2`` halves everything.
"""

from .checkpoints import latest_checkpoint
from .data import (
    DataError,
    GenerationItem,
    GenerationSummary,
    Record,
    ShardStore,
    generate_batch,
    generate_dataset,
    generate_reference,
    read_records,
    split_records,
)
from .lora import (
    AdapterError,
    AdapterInfo,
    apply_adapter_to_dir,
    attach_lora,
    merge_lora,
    save_adapter,
)
from .lowrank import LowrankResult, candidate_recall, collect_states, lowrank_stage, train_lowrank
from .sft import SFTConfig, SFTResult, train_lora
from .train import (
    TrainConfig,
    TrainResult,
    build_drafter,
    evaluate_loss,
    measure_tau,
    train_drafter,
    train_step,
)
from .ttt import (
    PrefixCache,
    TargetFeatures,
    TTTLoss,
    label_mask,
    steps_start,
    target_features,
    ttt_forward,
    ttt_loss,
    ttt_mask,
    ttt_positions,
)
from .vocab import apply_draft_vocab, select_draft_vocab, token_counts, vocab_coverage

__all__ = [
    "AdapterError",
    "AdapterInfo",
    "SFTConfig",
    "SFTResult",
    "apply_adapter_to_dir",
    "attach_lora",
    "merge_lora",
    "save_adapter",
    "train_lora",
    "DataError",
    "GenerationItem",
    "GenerationSummary",
    "LowrankResult",
    "PrefixCache",
    "Record",
    "ShardStore",
    "TTTLoss",
    "TargetFeatures",
    "TrainConfig",
    "TrainResult",
    "apply_draft_vocab",
    "build_drafter",
    "candidate_recall",
    "collect_states",
    "evaluate_loss",
    "generate_batch",
    "generate_dataset",
    "generate_reference",
    "label_mask",
    "latest_checkpoint",
    "lowrank_stage",
    "measure_tau",
    "read_records",
    "select_draft_vocab",
    "split_records",
    "steps_start",
    "target_features",
    "token_counts",
    "train_drafter",
    "train_lowrank",
    "train_step",
    "ttt_forward",
    "ttt_loss",
    "ttt_mask",
    "ttt_positions",
    "vocab_coverage",
]
