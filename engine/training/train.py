"""Drafter training loop (EAGLE-3 recipe): TTT loss, AdamW, warm-up, checkpoints, validation tau.

``build_drafter`` makes a fresh drafter for a target (optionally with a reduced
draft vocabulary selected from the training data, a sliding window, the
EAGLE-3.1 per-chunk norms and a low-rank head for stage 2). ``train_drafter``
runs the loop: deterministic data order (seed, epoch), AdamW betas (0.9, 0.95),
linear warm-up then cosine decay, gradient clipping (0.5), checkpoints under
``out/checkpoints/step-NNNNNNN/`` (drafter in the EAGLE-3 layout + optimizer,
scheduler, RNG and data position) with automatic resume from the newest one,
validation every ``val_every`` steps (TTT loss/accuracy per step on held-out
records and tau with ``decode_speculative`` on held-out prompts), and the final
drafter in ``out/drafter/``.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable, Sequence

import torch

from ..decode.sampling import SamplingParams
from ..decode.stats import DecodeStats
from ..decode.stopping import StopChecker
from ..speculative.checkpoint import load_drafter, save_drafter
from ..speculative.drafter import Drafter, DrafterConfig
from ..speculative.loop import FixedTree, TreeConfig, decode_speculative
from .checkpoints import latest_checkpoint, load_state, records_fingerprint, save_checkpoint
from .data import Record, progress_bar
from .ttt import (
    DEFAULT_DECAY,
    DEFAULT_STEPS,
    PrefixCache,
    TTTLoss,
    label_mask,
    steps_start,
    target_features,
    ttt_forward,
    ttt_loss,
)
from .vocab import apply_draft_vocab, select_draft_vocab, token_counts, vocab_coverage

__all__ = [
    "TrainConfig",
    "TrainResult",
    "build_drafter",
    "collate",
    "epoch_batches",
    "evaluate_loss",
    "latest_checkpoint",
    "measure_tau",
    "train_drafter",
    "train_step",
    "warmup_cosine",
]


@dataclass
class TrainConfig:
    epochs: int = 2
    max_steps: int | None = None  # overrides epochs when set
    batch_size: int = 4
    lr: float = 3e-4
    warmup_steps: int = 50
    min_lr_ratio: float = 0.1  # cosine decay down to lr * min_lr_ratio
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.95)
    grad_clip: float = 0.5
    freeze_head: bool = False  # keep an own (reduced-vocabulary) head at the target's rows
    norm_lr_scale: float = 10.0  # lr multiplier of the final norm (the logit scale)
    ttt_steps: int = DEFAULT_STEPS
    decay: float = DEFAULT_DECAY
    seed: int = 0
    max_length: int | None = None  # truncate sequences to this many tokens
    checkpoint_every: int = 200
    keep_checkpoints: int = 2
    val_every: int = 200  # 0: validate only at the end
    val_records: int = 16  # held-out records for the TTT loss/accuracy
    val_prompts: int = 6  # held-out prompts for tau
    val_max_new_tokens: int = 96
    tree_budget: int = 16
    tree_depth: int = 6
    tree_top_k: int = 4
    prefix_entries: int = 32  # target KV+taps of shared chat prefixes (~30 MB each for SmolLM2)

    def __post_init__(self) -> None:
        if self.ttt_steps < 1 or self.batch_size < 1 or self.lr <= 0:
            raise ValueError("ttt_steps, batch_size and lr must be positive")
        self.betas = tuple(self.betas)

    @property
    def tree(self) -> TreeConfig:
        return TreeConfig(self.tree_budget, self.tree_depth, self.tree_top_k)


@dataclass
class TrainResult:
    steps: int = 0
    seconds: float = 0.0
    last: dict = field(default_factory=dict)  # the last training step's TTT summary
    validation: dict = field(default_factory=dict)  # the last validation
    drafter_dir: str | None = None

    steps_run: int = 0  # steps of this call (after a resume: the rest)
    train_seconds: float = 0.0  # time in those steps, validation excluded

    @property
    def steps_per_s(self) -> float:
        return self.steps_run / self.train_seconds if self.train_seconds > 0 else 0.0


# ---- the drafter ---------------------------------------------------------------------------------
def build_drafter(
    target,
    records: Sequence[Record] = (),
    *,
    draft_vocab_size: int | None = None,
    window: int | None = None,
    chunk_norms: bool = True,
    lowrank_rank: int | None = None,
    lowrank_candidates: int = 64,
    always_include: Sequence[int] = (),
    seed: int = 0,
    norm_scale_init: float = 0.25,
    dtype: torch.dtype = torch.float32,
) -> tuple[Drafter, dict]:
    """A fresh drafter attached to ``target``; info: the vocabulary choice and its coverage.

    The final norm starts at ``norm_scale_init`` x the target's final norm: a random initial
    output direction through the full-scale head gives very peaked random logits (loss far
    above uniform, huge gradients); scaled down, the first predictions are near uniform and
    training starts smoothly. The scale is learned back (``TrainConfig.norm_lr_scale``).
    """
    cfg = target.config
    size = (
        draft_vocab_size
        if draft_vocab_size and draft_vocab_size < cfg.vocab_size
        else cfg.vocab_size
    )
    torch.manual_seed(seed)
    config = DrafterConfig.for_target(
        cfg,
        draft_vocab_size=size,
        window=window,
        chunk_norms=chunk_norms,
        lowrank_rank=lowrank_rank,
        lowrank_candidates=lowrank_candidates,
    )
    drafter = Drafter(config, dtype=dtype)
    with torch.no_grad():
        drafter.norm.weight.copy_(target.norm.weight.detach().float() * norm_scale_init)
    info: dict = {"draft_vocab_size": size}
    if records:
        counts = token_counts(
            (r.input_ids for r in records), cfg.vocab_size, (r.loss_mask for r in records)
        )
        info["response_tokens"] = int(counts.sum())
        info["distinct_tokens"] = int((counts > 0).sum())
        if size < cfg.vocab_size:
            ids = select_draft_vocab(counts, size, always_include)
            apply_draft_vocab(drafter, ids, target)
            info["coverage"] = round(vocab_coverage(counts, ids), 5)
        else:
            info["coverage"] = 1.0
    elif size < cfg.vocab_size:
        raise ValueError("a reduced draft vocabulary needs training records to count tokens")
    drafter.attach(target)
    if (
        lowrank_rank is not None
    ):  # usable from the start; stage 2 (engine.training.lowrank) refines it
        drafter.init_lowrank_from_head()
    return drafter, info


def warm_start(
    target,
    directory,
    records: Sequence[Record] = (),
    *,
    always_include: Sequence[int] = (),
    revocab: bool = True,
) -> tuple[Drafter, dict]:
    """A trained drafter from ``directory`` attached to ``target``, to train further (its
    architecture stays). With ``records`` and ``revocab``, a reduced draft vocabulary is chosen
    again from their response tokens (same size): rows of tokens it already had keep their
    trained head rows, new tokens start from the target's head rows. Info: the vocabulary's
    coverage of the records before and after."""
    from ..speculative.checkpoint import load_drafter

    drafter = load_drafter(directory, target, dtype=torch.float32)
    size = drafter.config.draft_vocab_size
    info: dict = {"draft_vocab_size": size, "init": str(directory)}
    if not records:
        return drafter, info
    counts = token_counts(
        (r.input_ids for r in records), target.config.vocab_size, (r.loss_mask for r in records)
    )
    info["response_tokens"] = int(counts.sum())
    info["distinct_tokens"] = int((counts > 0).sum())
    old_ids = drafter.draft_to_target().cpu()
    info["coverage_before"] = info["coverage"] = round(vocab_coverage(counts, old_ids), 5)
    if revocab and drafter.d2t is not None and size < target.config.vocab_size:
        new_ids = select_draft_vocab(counts, size, always_include)
        _revocab(drafter, old_ids, new_ids, target)
        info["coverage"] = round(vocab_coverage(counts, new_ids), 5)
        info["new_tokens"] = int(len(set(new_ids.tolist()) - set(old_ids.tolist())))
    return drafter, info


@torch.no_grad()
def _revocab(drafter: Drafter, old_ids: torch.Tensor, new_ids: torch.Tensor, target) -> None:
    """Install the vocabulary ``new_ids``; head rows follow their token (new ones: the target's
    rows)."""
    head = drafter.lm_head.weight
    old_row = {int(t): i for i, t in enumerate(old_ids.tolist())}
    target_head = target.lm_head.weight.detach().to(head.device, head.dtype)
    rows = torch.stack(
        [head[old_row[t]] if t in old_row else target_head[t] for t in new_ids.tolist()]
    )
    drafter.set_vocab_map(new_ids)
    head.copy_(rows)


def _trainable(
    drafter: Drafter, lowrank: bool = False, freeze_head: bool = False
) -> list[torch.nn.Parameter]:
    """Set requires_grad: stage 1 trains all but the low-rank factors (and the head if frozen);
    stage 2 only them."""
    params = []
    for name, p in drafter.named_parameters():
        wanted = name.startswith("lowrank_") == lowrank and not (
            freeze_head and name == "lm_head.weight"
        )
        p.requires_grad_(wanted)
        if wanted:
            params.append(p)
    return params


# ---- batches -------------------------------------------------------------------------------------
def epoch_batches(
    lengths: Sequence[int], batch_size: int, seed: int, epoch: int
) -> list[list[int]]:
    """Record indices per batch for one epoch: shuffled, length-grouped, deterministic in
    (seed, epoch)."""
    gen = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
    perm = torch.randperm(len(lengths), generator=gen).tolist()
    group = batch_size * 16
    batches = []
    for i in range(0, len(perm), group):
        chunk = sorted(perm[i : i + group], key=lambda r: lengths[r])
        batches += [chunk[j : j + batch_size] for j in range(0, len(chunk), batch_size)]
    order = torch.randperm(len(batches), generator=gen).tolist()
    return [batches[o] for o in order]


def collate(records: Sequence[Record], max_length: int | None = None, device=None):
    """(sequences, tokens [B, T] right-padded with 0, loss_mask [B, T], prefix_lens)."""
    seqs = [r.input_ids[:max_length] if max_length else r.input_ids for r in records]
    masks = [r.loss_mask[: len(s)] for r, s in zip(records, seqs)]
    t = max(len(s) for s in seqs)
    tokens = torch.zeros(len(seqs), t, dtype=torch.long, device=device)
    loss_mask = torch.zeros(len(seqs), t, dtype=torch.long, device=device)
    for row, (s, m) in enumerate(zip(seqs, masks)):
        tokens[row, : len(s)] = torch.tensor(s, device=device)
        loss_mask[row, : len(m)] = torch.tensor(m, device=device)
    return seqs, tokens, loss_mask, [r.prefix_len for r in records]


def train_step(
    target,
    drafter: Drafter,
    records: Sequence[Record],
    *,
    steps: int = DEFAULT_STEPS,
    decay: float = DEFAULT_DECAY,
    max_length: int | None = None,
    prefix_cache: PrefixCache | None = None,
) -> TTTLoss:
    """Forward of one batch: target features on the fly, TTT unroll, loss (call
    .loss.backward())."""
    outputs, features, labels, start = unroll_batch(
        target, drafter, records, steps=steps, max_length=max_length, prefix_cache=prefix_cache
    )
    return ttt_loss(drafter, outputs, features, labels, start, decay)


def unroll_batch(
    target,
    drafter: Drafter,
    records: Sequence[Record],
    *,
    steps: int,
    max_length: int | None,
    prefix_cache: PrefixCache | None,
):
    """Target features for ``records`` and the drafter's TTT unroll over them.

    Returns (outputs per step, features, label mask, first position of each step)."""
    device = drafter.fc.weight.device
    seqs, tokens, loss_mask, prefix_lens = collate(records, max_length, device)
    labels = label_mask(loss_mask)
    vocab_ids = drafter.draft_to_target() if drafter.d2t is not None else None
    features = target_features(
        target,
        seqs,
        labels,
        vocab_ids=vocab_ids,
        prefix_lens=prefix_lens,
        prefix_cache=prefix_cache,
    )
    start = steps_start(labels, steps)
    return (
        ttt_forward(drafter, drafter.fuse(features.taps), tokens, steps, start),
        features,
        labels,
        start,
    )


# ---- validation ----------------------------------------------------------------------------------
@torch.no_grad()
def evaluate_loss(
    target,
    drafter: Drafter,
    records: Sequence[Record],
    *,
    steps: int = DEFAULT_STEPS,
    decay: float = DEFAULT_DECAY,
    batch_size: int = 4,
    max_length: int | None = None,
    prefix_cache: PrefixCache | None = None,
) -> dict:
    """Mean TTT loss (per batch) and per-step accuracy (draft argmax == target argmax) over
    ``records``."""
    hits, counts = [0.0] * steps, [0] * steps
    loss_sum, batches = 0.0, 0
    for i in range(0, len(records), batch_size):
        res = train_step(
            target,
            drafter,
            records[i : i + batch_size],
            steps=steps,
            decay=decay,
            max_length=max_length,
            prefix_cache=prefix_cache,
        )
        loss_sum, batches = loss_sum + float(res.loss.detach()), batches + 1
        for k, (acc, n) in enumerate(zip(res.step_acc, res.step_count)):
            hits[k] += acc * n
            counts[k] += n
    if not batches:
        return {}
    return {
        "loss": round(loss_sum / batches, 4),
        "step_acc": [round(h / n, 4) if n else 0.0 for h, n in zip(hits, counts)],
    }


def measure_tau(
    target,
    drafter: Drafter,
    prompts: Sequence[Sequence[int]],
    eos_ids: Sequence[int],
    *,
    max_new_tokens: int = 96,
    tree: TreeConfig | None = None,
    repetition_penalty: float = 1.0,
    temperature: float = 0.0,
    top_p: float = 1.0,
    seed: int = 0,
) -> dict:
    """tau = generated tokens / target forward passes of ``decode_speculative`` over the prompts."""
    new_tokens = forwards = 0
    accepted: list[int] = []
    started = time.perf_counter()
    was_training = drafter.training
    drafter.eval()
    for i, prompt in enumerate(prompts):
        params = SamplingParams(
            temperature=temperature,
            top_p=top_p,
            repetition_penalty=repetition_penalty,
            max_new_tokens=max_new_tokens,
            seed=seed + i,
        )
        stats = DecodeStats()
        for _ in decode_speculative(
            target,
            drafter,
            list(prompt),
            params,
            StopChecker(eos_ids, max_new_tokens),
            stats,
            FixedTree(tree),
        ):
            pass
        new_tokens += stats.new_tokens
        forwards += stats.target_forwards
        accepted += stats.accepted_lengths
    drafter.train(was_training)
    seconds = time.perf_counter() - started
    return {
        "tau": round(new_tokens / forwards, 4) if forwards else 0.0,
        "prompts": len(prompts),
        "new_tokens": new_tokens,
        "target_forwards": forwards,
        "mean_accepted": round(sum(accepted) / len(accepted), 4) if accepted else 0.0,
        "tokens_per_s": round(new_tokens / seconds, 2) if seconds > 0 else 0.0,
    }


def _validate(target, drafter, val_records, config: TrainConfig, eos_ids, prefix_cache) -> dict:
    out: dict = {}
    if val_records and config.val_records:
        out["val"] = evaluate_loss(
            target,
            drafter,
            val_records[: config.val_records],
            steps=config.ttt_steps,
            decay=config.decay,
            batch_size=config.batch_size,
            max_length=config.max_length,
            prefix_cache=prefix_cache,
        )
    prompts = [r for r in val_records if r.prompt_len < len(r.input_ids)][: config.val_prompts]
    if prompts and config.val_max_new_tokens > 0:
        penalty = float(prompts[0].meta.get("repetition_penalty", 1.0))
        out["greedy"] = measure_tau(
            target,
            drafter,
            [r.prompt_ids for r in prompts],
            eos_ids,
            max_new_tokens=config.val_max_new_tokens,
            tree=config.tree,
            repetition_penalty=penalty,
        )
    return out


# ---- checkpoints ---------------------------------------------------------------------------------
def _data_fingerprint(records: Sequence[Record], config: TrainConfig, drafter: Drafter) -> str:
    keep = {
        k: v
        for k, v in asdict(config).items()
        if k in ("batch_size", "seed", "ttt_steps", "max_length")
    }
    return records_fingerprint(
        records, [keep, asdict(replace(drafter.config, target_fingerprint=None))]
    )


def _save_checkpoint(
    out_dir: Path, target, drafter, optimizer, scheduler, state: dict, keep: int
) -> Path:
    return save_checkpoint(
        out_dir,
        state,
        optimizer,
        scheduler,
        keep,
        lambda path: save_drafter(drafter, path / "drafter", target=target),
    )


def warmup_cosine(warmup_steps: int, min_lr_ratio: float, total: int) -> Callable[[int], float]:
    """LR factor per step: linear warm-up to 1, then cosine decay to ``min_lr_ratio`` at
    ``total``."""
    warmup = max(0, warmup_steps)

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        if total <= warmup:
            return 1.0
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        return min_lr_ratio + (1 - min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))

    return factor


# ---- the loop ------------------------------------------------------------------------------------
def train_drafter(
    target,
    drafter: Drafter,
    train_records: Sequence[Record],
    out_dir: str | Path,
    config: TrainConfig | None = None,
    *,
    val_records: Sequence[Record] = (),
    eos_ids: Sequence[int] = (),
    resume: bool = True,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
) -> TrainResult:
    """Train ``drafter`` (attached to the frozen ``target``) on the records; see the module
    docstring."""
    config = config or TrainConfig()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if not train_records:
        raise ValueError("no training records")
    target.eval()
    for p in target.parameters():
        p.requires_grad_(False)
    params = _trainable(drafter, freeze_head=config.freeze_head)
    norm = [p for p in params if p is drafter.norm.weight]
    groups = [{"params": [p for p in params if p is not drafter.norm.weight]}]
    if norm:
        groups.append({"params": norm, "lr": config.lr * config.norm_lr_scale})
    optimizer = torch.optim.AdamW(
        groups, lr=config.lr, betas=config.betas, weight_decay=config.weight_decay
    )
    per_epoch = math.ceil(len(train_records) / config.batch_size)
    total = config.max_steps if config.max_steps else config.epochs * per_epoch
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, warmup_cosine(config.warmup_steps, config.min_lr_ratio, total)
    )
    fingerprint = _data_fingerprint(train_records, config, drafter)
    step, epoch, position = 0, 0, 0
    checkpoint = latest_checkpoint(out_dir) if resume else None
    if checkpoint is not None:
        state = load_state(checkpoint, fingerprint, optimizer, scheduler)
        loaded = load_drafter(checkpoint / "drafter", target, dtype=drafter.fc.weight.dtype)
        drafter.load_state_dict(loaded.state_dict())
        step, epoch, position = state["step"], state["epoch"], state["position"]
        if log:
            log(f"resumed from {checkpoint} (step {step})")
    (out_dir / "train_config.json").write_text(
        json.dumps(
            {
                "train": asdict(config),
                "drafter": asdict(drafter.config),
                "train_records": len(train_records),
                "val_records": len(val_records),
                "data_fingerprint": fingerprint,
            },
            indent=2,
        )
        + "\n"
    )
    log_file = open(out_dir / "train_log.jsonl", "a", encoding="utf-8")
    prefix_cache = PrefixCache(target, config.prefix_entries)
    lengths = [len(r.input_ids) for r in train_records]
    result = TrainResult(steps=step)
    bar = progress_bar(total, enabled=progress, desc="train", initial=step, unit="step")
    started = time.perf_counter()

    def write(entry: dict) -> None:
        log_file.write(json.dumps(entry) + "\n")
        log_file.flush()

    def validate() -> None:
        drafter.eval()
        val = _validate(target, drafter, val_records, config, eos_ids, prefix_cache)
        drafter.train()
        if val:
            result.validation = {"step": step, **val}
            write({"step": step, "validation": val})
            if log:
                log(f"step {step}: validation {json.dumps(val)}")

    try:
        drafter.train()
        while step < total:
            batches = epoch_batches(lengths, config.batch_size, config.seed, epoch)
            while position < len(batches) and step < total:
                t0 = time.perf_counter()
                records = [train_records[i] for i in batches[position]]
                res = train_step(
                    target,
                    drafter,
                    records,
                    steps=config.ttt_steps,
                    decay=config.decay,
                    max_length=config.max_length,
                    prefix_cache=prefix_cache,
                )
                optimizer.zero_grad(set_to_none=True)
                res.loss.backward()
                grad_norm = float(torch.nn.utils.clip_grad_norm_(params, config.grad_clip))
                optimizer.step()
                scheduler.step()
                step, position = step + 1, position + 1
                result.steps_run += 1
                result.train_seconds += time.perf_counter() - t0
                result.last = {**res.summary(), "grad_norm": round(grad_norm, 4)}
                lr = scheduler.get_last_lr()[0]
                write({"step": step, "epoch": epoch, "lr": lr, **result.last})
                bar.update(1)
                bar.set_postfix(
                    loss=f"{float(res.loss.detach()):.3f}",
                    acc0=f"{res.step_acc[0]:.2f}",
                    lr=f"{lr:.1e}",
                )
                if config.checkpoint_every and step % config.checkpoint_every == 0 and step < total:
                    _save_checkpoint(
                        out_dir,
                        target,
                        drafter,
                        optimizer,
                        scheduler,
                        {
                            "step": step,
                            "epoch": epoch,
                            "position": position,
                            "data_fingerprint": fingerprint,
                        },
                        config.keep_checkpoints,
                    )
                if config.val_every and step % config.val_every == 0 and step < total:
                    validate()
            if position >= len(batches):
                epoch, position = epoch + 1, 0
        result.steps = step
        _save_checkpoint(
            out_dir,
            target,
            drafter,
            optimizer,
            scheduler,
            {"step": step, "epoch": epoch, "position": position, "data_fingerprint": fingerprint},
            config.keep_checkpoints,
        )
        final = save_drafter(drafter, out_dir / "drafter", target=target)
        result.drafter_dir = str(final)
        validate()
    finally:
        bar.close()
        log_file.close()
    result.seconds = time.perf_counter() - started
    drafter.eval()
    return result
