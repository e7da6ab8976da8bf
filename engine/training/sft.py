"""Supervised fine-tuning of the target runtime with LoRA: loss on answer tokens, AdamW,
checkpoints.

``train_lora`` trains the adapters ``engine.training.lora.attach_lora`` put on a
``Transformer``: batches of ``Record`` (``loss_mask`` 1 = answer token, the
end-of-turn token included), next-token cross-entropy on answer tokens only,
AdamW with linear warm-up, cosine decay and gradient clipping, deterministic
length-grouped batches per (seed, epoch), checkpoints under
``out/checkpoints/step-NNNNNNN/`` (adapter + optimizer, scheduler, RNG, data
position) with automatic resume from the newest one, validation loss every
``val_every`` steps plus an optional caller-supplied check (promptx measures
its assessment pass rate there), and the final adapter at
``out/adapter.safetensors``.

Not here: rendering prompts or reading pair files (promptx), the LoRA layers and
their file format (``engine.training.lora``).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import torch
import torch.nn.functional as F

from ..runtime.model import Transformer
from .checkpoints import latest_checkpoint, load_state, records_fingerprint, save_checkpoint
from .data import Record, progress_bar
from .lora import AdapterInfo, adapter_parameters, load_adapter, save_adapter
from .train import collate, epoch_batches, warmup_cosine

__all__ = [
    "ADAPTER_FILE",
    "SFTConfig",
    "SFTResult",
    "answer_loss",
    "evaluate_answer_loss",
    "train_lora",
]

ADAPTER_FILE = "adapter.safetensors"


@dataclass
class SFTConfig:
    epochs: int = 1
    max_steps: int | None = None  # overrides epochs when set
    batch_size: int = 8
    lr: float = 3e-4
    warmup_steps: int = 20
    min_lr_ratio: float = 0.1
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.98)
    grad_clip: float = 1.0
    max_length: int = 512  # longer records are cut (their tail answer tokens drop)
    seed: int = 0
    checkpoint_every: int = 50
    keep_checkpoints: int = 2
    val_every: int = 100  # 0: validate only at the end
    autocast: str | None = None  # "bfloat16": matmuls in bf16, LoRA weights and optimizer in fp32


@dataclass
class SFTResult:
    steps: int = 0
    steps_run: int = 0
    train_seconds: float = 0.0
    answer_tokens: int = 0  # answer tokens trained on in this run
    tokens: int = 0  # all tokens through the model in this run
    adapter_path: str | None = None
    last: dict = field(default_factory=dict)
    validation: dict = field(default_factory=dict)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.train_seconds if self.train_seconds else 0.0


class _PassThrough:
    """Stands in for a KV cache in a training pass: keys and values go straight to attention."""

    length = 0

    @staticmethod
    def write(layer: int, start: int, k: torch.Tensor, v: torch.Tensor, span=None, slots=None):
        return k, v


def _hidden(model: Transformer, tokens: torch.Tensor) -> torch.Tensor:
    """Final hidden states [B, T, H] of a causal pass from position 0, with autograd."""
    positions = torch.arange(tokens.shape[1], device=tokens.device)
    rope = model.rope.heads_rotation(positions, model.dtype)
    x = model.embed_tokens(tokens).flatten(0, 1)  # the blocks' hidden stream: [B*T, H]
    for i, layer in enumerate(model.layers):
        x = layer(x, rope, _PassThrough, i, 0, None)
    return x.view(*tokens.shape, -1)


def answer_loss(model: Transformer, records: Sequence[Record], max_length: int | None = None):
    """Mean next-token cross-entropy over the answer tokens of ``records``; (loss, answer tokens,
    tokens)."""
    device = model.embed_tokens.weight.device
    _, tokens, loss_mask, _ = collate(records, max_length, device)
    predicted = loss_mask[:, 1:].bool()  # position t predicts token t+1
    count = int(predicted.sum())
    if count == 0:
        raise ValueError("no answer tokens in the batch (all cut by max_length?)")
    hidden = _hidden(model, tokens)[:, :-1][predicted]
    logits = model.logits(hidden[None])[0].float()
    loss = F.cross_entropy(logits, tokens[:, 1:][predicted])
    return loss, count, int(sum(min(len(r.input_ids), max_length or 10**9) for r in records))


@torch.no_grad()
def evaluate_answer_loss(
    model: Transformer,
    records: Sequence[Record],
    batch_size: int = 8,
    max_length: int | None = None,
) -> float:
    """Answer-token cross-entropy over ``records`` (token weighted)."""
    total, count = 0.0, 0
    for i in range(0, len(records), batch_size):
        loss, n, _ = answer_loss(model, records[i : i + batch_size], max_length)
        total, count = total + float(loss) * n, count + n
    return total / max(1, count)


def _compute_precision(model: Transformer, name: str | None):
    """The autocast context of a training pass (a no-op for fp32)."""
    if name in (None, "float32"):
        return torch.autocast(model.embed_tokens.weight.device.type, enabled=False)
    if name != "bfloat16":
        raise ValueError(f"unknown training precision {name!r} (float32 or bfloat16)")
    return torch.autocast(model.embed_tokens.weight.device.type, dtype=torch.bfloat16)


def _fingerprint(records: Sequence[Record], config: SFTConfig, info: AdapterInfo) -> str:
    keep = {k: getattr(config, k) for k in ("batch_size", "seed", "max_length")}
    return records_fingerprint(records, [keep, info.rank, info.alpha, list(info.modules)])


def _load_adapter_weights(model: Transformer, path: Path) -> None:
    _, tensors = load_adapter(path)
    own = {name: p for name, p in model.named_parameters() if "lora_" in name}
    if set(own) != set(tensors):
        raise ValueError(f"{path}: the adapter's layers differ from the model's")
    with torch.no_grad():
        for name, p in own.items():
            p.copy_(tensors[name].to(p.dtype))


def _resume(
    out_dir: Path, model, optimizer, scheduler, fingerprint: str, log
) -> tuple[int, int, int]:
    checkpoint = latest_checkpoint(out_dir)
    if checkpoint is None:
        return 0, 0, 0
    state = load_state(checkpoint, fingerprint, optimizer, scheduler)
    _load_adapter_weights(model, checkpoint / ADAPTER_FILE)
    if log:
        log(f"resumed from {checkpoint} (step {state['step']})")
    return state["step"], state["epoch"], state["position"]


def train_lora(
    model: Transformer,
    info: AdapterInfo,
    train_records: Sequence[Record],
    out_dir: str | Path,
    config: SFTConfig | None = None,
    *,
    val_records: Sequence[Record] = (),
    check: Callable[[Transformer, int], dict] | None = None,
    resume: bool = True,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
) -> SFTResult:
    """Train the LoRA layers of ``model`` on ``train_records``; see the module docstring.

    ``check(model, step)`` runs at each validation (model in eval mode) and its
    dict joins the validation entry of the log.
    """
    config = config or SFTConfig()
    if not train_records:
        raise ValueError("no training records")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    params = adapter_parameters(model)
    if not params:
        raise ValueError("the model has no LoRA layers (call attach_lora first)")
    optimizer = torch.optim.AdamW(
        params, lr=config.lr, betas=config.betas, weight_decay=config.weight_decay
    )
    per_epoch = math.ceil(len(train_records) / config.batch_size)
    total = config.max_steps if config.max_steps else config.epochs * per_epoch
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, warmup_cosine(config.warmup_steps, config.min_lr_ratio, total)
    )
    fingerprint = _fingerprint(train_records, config, info)
    step, epoch, position = (
        _resume(out_dir, model, optimizer, scheduler, fingerprint, log) if resume else (0, 0, 0)
    )
    (out_dir / "tune_config.json").write_text(
        json.dumps(
            {
                "train": asdict(config),
                "adapter": asdict(info),
                "train_records": len(train_records),
                "val_records": len(val_records),
                "data_fingerprint": fingerprint,
            },
            indent=2,
        )
        + "\n"
    )
    lengths = [len(r.input_ids) for r in train_records]
    result = SFTResult(steps=step)
    log_file = open(out_dir / "tune_log.jsonl", "a", encoding="utf-8")
    bar = progress_bar(total, enabled=progress, desc="tune", initial=step, unit="step")

    def write(entry: dict) -> None:
        log_file.write(json.dumps(entry) + "\n")
        log_file.flush()

    def validate() -> None:
        model.eval()
        entry: dict = {}
        if val_records:
            entry["val_loss"] = round(
                evaluate_answer_loss(model, val_records, config.batch_size, config.max_length), 4
            )
        if check is not None:
            entry.update(check(model, step))
        model.train()
        if entry:
            result.validation = {"step": step, **entry}
            write({"step": step, "validation": entry})
            if log:
                log(f"step {step}: validation {json.dumps(entry)}")

    def checkpoint() -> None:
        save_checkpoint(
            out_dir,
            {"step": step, "epoch": epoch, "position": position, "data_fingerprint": fingerprint},
            optimizer,
            scheduler,
            config.keep_checkpoints,
            lambda path: save_adapter(model, path / ADAPTER_FILE, info),
        )

    try:
        model.train()
        while step < total:
            batches = epoch_batches(lengths, config.batch_size, config.seed, epoch)
            while position < len(batches) and step < total:
                started = time.perf_counter()
                with _compute_precision(model, config.autocast):
                    loss, answer_tokens, tokens = answer_loss(
                        model, [train_records[i] for i in batches[position]], config.max_length
                    )
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                grad_norm = float(torch.nn.utils.clip_grad_norm_(params, config.grad_clip))
                optimizer.step()
                scheduler.step()
                step, position = step + 1, position + 1
                result.steps_run += 1
                result.train_seconds += time.perf_counter() - started
                result.answer_tokens += answer_tokens
                result.tokens += tokens
                lr = scheduler.get_last_lr()[0]
                result.last = {
                    "loss": round(float(loss.detach()), 4),
                    "grad_norm": round(grad_norm, 4),
                    "tokens": tokens,
                }
                write({"step": step, "epoch": epoch, "lr": lr, **result.last})
                bar.update(1)
                bar.set_postfix(
                    loss=f"{result.last['loss']:.3f}",
                    lr=f"{lr:.1e}",
                    tok_s=f"{result.tokens_per_s:.0f}",
                )
                if config.checkpoint_every and step % config.checkpoint_every == 0 and step < total:
                    checkpoint()
                if config.val_every and step % config.val_every == 0 and step < total:
                    validate()
            if position >= len(batches):
                epoch, position = epoch + 1, 0
        result.steps = step
        checkpoint()
        result.adapter_path = str(save_adapter(model, out_dir / ADAPTER_FILE, info))
        validate()
    finally:
        bar.close()
        log_file.close()
    model.eval()
    return result
