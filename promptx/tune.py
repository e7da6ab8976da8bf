"""Fine-tune a model for promptx: tuning pairs -> training records -> LoRA adapter -> tuned model.

Each pair is rendered the way the runtime asks a tuned model (the profile's
short system prompt, no few-shot examples: ``prompt_style="short"``), its
answer followed by the end-of-turn token; the loss is on the answer only.
``tune`` trains with ``engine.training.sft.train_lora``, measures the
held-out answer loss and the assessment pass rate of real enhancements of
held-out inputs (through ``Enhancer``), and writes ``out/adapter.safetensors``
plus ``out/model/``, the merged model any ``--model`` option accepts.

Not here: the training loop and LoRA layers (engine.training), the pair file
format (``promptx.tuning_pairs``), the command line (``promptx.cli.tune``).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from .errors import InvalidInputError
from .profiles.registry import TemplateRegistry
from .profiles.render import render_messages
from .tuning_pairs import PairRow, TuningPair

__all__ = [
    "CheckResult",
    "TuneReport",
    "balanced",
    "pair_messages",
    "pair_records",
    "passes_on",
    "tune",
]

PROMPT_STYLE = "short"


def pair_messages(pair: TuningPair, registry: TemplateRegistry) -> list[dict[str, str]]:
    """The chat a tuned model gets for this pair's input (what the runtime will render)."""
    profile = registry.get(pair.target)
    return render_messages(
        profile, pair.input, caption=pair.image, style=pair.style, prompt_style=PROMPT_STYLE
    )


def pair_records(rows: Sequence[PairRow], registry: TemplateRegistry, tokenizer):
    """Training records (engine.training.Record): prompt tokens, then answer + end-of-turn
    (loss 1)."""
    from engine import Record

    end = _end_of_turn(tokenizer)
    records = []
    for row in rows:
        prompt = tokenizer.encode_chat(pair_messages(row.pair, registry))
        answer = tokenizer.encode(row.pair.output.strip()) + [end]
        records.append(
            Record(
                row.pair.id,
                prompt + answer,
                [0] * len(prompt) + [1] * len(answer),
                meta={"target": row.pair.target},
            )
        )
    return records


def _end_of_turn(tokenizer) -> int:
    """The token a chat answer ends with (``<|im_end|>`` for ChatML models)."""
    eos = tokenizer.eos_token_ids
    if not eos:
        raise InvalidInputError("the model's tokenizer names no end-of-turn token")
    named = tokenizer.eos_token
    ids = tokenizer.encode(named) if named else []
    return ids[0] if len(ids) == 1 and ids[0] in eos else min(eos)


def balanced(rows: Sequence[PairRow], n: int) -> list[PairRow]:
    """Up to ``n`` rows taken round-robin over targets (each target's rows in file order)."""
    by_target: dict[str, list[PairRow]] = {}
    for row in rows:
        by_target.setdefault(row.pair.target, []).append(row)
    queues = [list(v) for _, v in sorted(by_target.items())]
    out: list[PairRow] = []
    while len(out) < n and any(queues):
        for queue in queues:
            if queue and len(out) < n:
                out.append(queue.pop(0))
    return out


@dataclass
class CheckResult:
    """Real enhancements of held-out inputs, assessed."""

    n: int = 0
    passed: int = 0  # final output passes (with the usual retries)
    first_passed: int = 0  # passed on the first attempt
    fallbacks: int = 0
    examples: list[dict] = field(default_factory=list)

    def summary(self) -> dict:
        rate = lambda k: round(k / self.n, 4) if self.n else 0.0
        return {
            "check_n": self.n,
            "pass_rate": rate(self.passed),
            "first_pass_rate": rate(self.first_passed),
            "fallback_rate": rate(self.fallbacks),
        }


def passes_on(enhancer, rows: Sequence[PairRow], *, seed: int = 0) -> CheckResult:
    """Enhance each row's input with ``enhancer`` and count what the assessment passes."""
    result = CheckResult()
    for row in rows:
        pair = row.pair
        out = enhancer.enhance(
            pair.input, target=pair.target, caption=pair.image, style=pair.style, seed=seed
        )
        ok = not out.fallback and out.assessment is not None and out.assessment.passed
        result.n += 1
        result.passed += ok
        result.first_passed += ok and out.stats.attempts == 1
        result.fallbacks += out.fallback
        result.examples.append(
            {
                "id": pair.id,
                "target": pair.target,
                "input": pair.input,
                "passed": ok,
                "text": out.text,
                "reason": out.reason,
            }
        )
    return result


def _checker(rows: Sequence[PairRow], tokenizer, name: str) -> Callable:
    """``check(model, step)`` for train_lora: the pass rate of the model being trained."""
    from engine import Generator

    from .backends.embedded import EmbeddedBackend
    from .enhancer import Enhancer

    def check(model, step: int) -> dict:
        backend = EmbeddedBackend.around(
            Generator(model, tokenizer), name, prompt_style=PROMPT_STYLE
        )
        result = passes_on(
            Enhancer(backend=backend, templates_dir=None, quiet=True, strength="full"), rows
        )
        check.last = result
        return result.summary()

    check.last = None
    return check


@dataclass
class TuneReport:
    steps: int
    train_records: int
    heldout_records: int
    tokens_per_s: float
    train_seconds: float
    adapter: str
    model_dir: str
    validation: dict
    examples: list[dict]

    def to_json(self) -> str:
        return json.dumps(self.__dict__, indent=2, ensure_ascii=False) + "\n"


def tune(
    model_dir: Path,
    base_name: str,
    train_rows: Sequence[PairRow],
    heldout_rows: Sequence[PairRow],
    out_dir: Path,
    registry: TemplateRegistry,
    *,
    rank: int,
    alpha: float,
    config,
    val_pairs: int = 48,
    check_prompts: int = 16,
    resume: bool = True,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
) -> TuneReport:
    """Train a LoRA adapter on ``train_rows``, validate on ``heldout_rows``, write adapter + merged
    model."""
    import torch

    from engine import AdapterInfo, apply_adapter_to_dir, attach_lora
    from engine import train_lora
    from engine import load_model

    model, tokenizer = load_model(model_dir, torch.float32)
    attached = attach_lora(model, rank=rank, alpha=alpha)
    info = AdapterInfo(
        rank=attached.rank,
        alpha=attached.alpha,
        modules=attached.modules,
        base=base_name,
        extra=json.dumps({"prompt_style": PROMPT_STYLE, "train_pairs": len(train_rows)}),
    )
    train = pair_records(train_rows, registry, tokenizer)
    heldout = pair_records(balanced(heldout_rows, val_pairs), registry, tokenizer)
    check = (
        _checker(balanced(heldout_rows, check_prompts), tokenizer, base_name)
        if check_prompts
        else None
    )
    result = train_lora(
        model,
        info,
        train,
        out_dir,
        config,
        val_records=heldout,
        check=check,
        resume=resume,
        progress=progress,
        log=log,
    )
    merged = out_dir / "model"
    if merged.exists():
        shutil.rmtree(merged)
    shutil.copytree(model_dir, merged, ignore=shutil.ignore_patterns(".*"))
    apply_adapter_to_dir(merged, result.adapter_path)
    report = TuneReport(
        steps=result.steps,
        train_records=len(train),
        heldout_records=len(heldout),
        tokens_per_s=round(result.tokens_per_s, 1),
        train_seconds=round(result.train_seconds, 1),
        adapter=result.adapter_path,
        model_dir=str(merged),
        validation=result.validation,
        examples=check.last.examples if check is not None and check.last else [],
    )
    (out_dir / "report.json").write_text(report.to_json(), encoding="utf-8")
    return report
