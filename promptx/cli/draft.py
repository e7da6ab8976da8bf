"""``promptx draft``: self-distillation data and training for the EAGLE drafter of a target model.

Commands (registered into the main CLI as ``promptx draft ...``):

- ``generate-data``: render public short prompts (../shared/data/prompts) through
  the templates of all four tasks exactly as ``Enhancer`` does at serving time
  (``EnhanceRequest.build`` + ``render_messages`` + the model's chat template)
  and let the target answer them (a mix of greedy and sampled decoding at the
  profiles' temperatures); writes resumable shards (``engine.training.data``).
- ``train``: reduced draft vocabulary, TTT training, validation tau, optional
  low-rank stage 2; the drafter lands in ``OUT/drafter`` (EAGLE-3 layout). Copy
  it to ``promptx/drafters/<name>/`` to ship it.
- ``eval``: tau (and speed against plain decoding) of a drafter on held-out prompts.
- ``export``: a drafter in the layouts vLLM, SGLang and llama.cpp load
  (``engine.speculative.export``), with their launch commands.

Prompt sources and rendering: ``promptx.draft_prompts``.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path
from typing import Sequence

import click

from ..draft_prompts import DEFAULT_PROMPTS_DIR, TASKS, build_items, load_prompt_specs
from ..errors import InvalidInputError, ModelError
from ..profiles.registry import registry_for
from .common import MODEL_HELP, load_generator


# ---- shared options ------------------------------------------------------------------------------
def _setup_threads(threads: int | None) -> None:
    if threads:
        import torch

        torch.set_num_threads(threads)


def _load_target(model: str | None, quiet: bool, dtype: str = "float32"):
    """(target, tokenizer, model directory); float32 unless asked: the precision drafters train and
    verify in."""
    _, directory, generator = load_generator(model, dtype, quiet=quiet)
    return generator.model, generator.tokenizer, directory


def _eos_ids(target, tokenizer) -> tuple[int, ...]:
    return tuple(tokenizer.eos_token_ids or target.config.eos_token_ids)


def _echo_json(data: dict) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


_model_option = click.option("--model", help=MODEL_HELP)
_threads_option = click.option(
    "--threads", type=click.IntRange(min=1), help="torch threads (default: torch's)."
)
_prompts_option = click.option(
    "--prompts-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=DEFAULT_PROMPTS_DIR,
    show_default=True,
    help="Public prompt sets.",
)


@click.group()
def draft() -> None:
    """Train the speculative-decoding drafter: generate data, train, evaluate."""


@draft.command("generate-data")
@_model_option
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="Data directory (resumable: rerun to continue).",
)
@_prompts_option
@click.option("--tasks", default=",".join(TASKS), show_default=True, help="Comma-separated tasks.")
@click.option(
    "--limit", type=click.IntRange(min=1), default=2000, show_default=True, help="Prompts in total."
)
@click.option("--greedy-fraction", type=click.FloatRange(0, 1), default=0.3, show_default=True)
@click.option("--style-fraction", type=click.FloatRange(0, 1), default=0.25, show_default=True)
@click.option("--max-new-tokens", type=click.IntRange(min=1), help="Cap on the profiles' budgets.")
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=16,
    show_default=True,
    help="Prompts decoded together (rows leave the batch as they finish).",
)
@click.option("--shard-size", type=click.IntRange(min=1), default=256, show_default=True)
@click.option(
    "--format", "fmt", type=click.Choice(["jsonl", "pt"]), default="jsonl", show_default=True
)
@click.option(
    "--reference", is_flag=True, help="Decode one prompt at a time with decode_autoregressive."
)
@click.option(
    "--dtype",
    default="float32",
    show_default=True,
    help="Precision the answers are decoded in (float32, bfloat16, int4, auto). Training always "
    "runs the target in float32 over the stored tokens, so a faster precision only changes which "
    "contexts the drafter sees (int4: ~1.9x float32's tokens/s on the project machine).",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--templates-dir", type=click.Path(path_type=Path, file_okay=False))
@_threads_option
@click.option("--quiet", is_flag=True)
def generate_data(
    model,
    out_dir,
    prompts_dir,
    tasks,
    limit,
    greedy_fraction,
    style_fraction,
    max_new_tokens,
    batch_size,
    shard_size,
    fmt,
    reference,
    dtype,
    seed,
    templates_dir,
    threads,
    quiet,
) -> None:
    """Let the target answer rendered prompts; write token ids + loss masks to OUT.

    Rerun to continue. Item ids cover the rendered prompt tokens: after a template
    change use a fresh OUT (older records would stay in the directory).
    """
    from engine import generate_dataset

    _setup_threads(threads)
    wanted = [t.strip() for t in tasks.split(",") if t.strip()]
    unknown = set(wanted) - set(TASKS)
    if unknown:
        raise click.ClickException(
            f"unknown tasks {sorted(unknown)}; choose from {', '.join(TASKS)}"
        )
    target, tokenizer, directory = _load_target(model, quiet, dtype)
    per_task = load_prompt_specs(prompts_dir, wanted, seed=seed)
    from ..models import prompt_style_of

    items = build_items(
        tokenizer,
        registry_for(templates_dir),
        per_task,
        limit=limit,
        seed=seed,
        greedy_fraction=greedy_fraction,
        style_fraction=style_fraction,
        max_new_tokens=max_new_tokens,
        prompt_style=prompt_style_of(directory),
    )
    if not items:
        raise click.ClickException("no prompts to generate from")
    summary = generate_dataset(
        target,
        items,
        out_dir,
        eos_ids=_eos_ids(target, tokenizer),
        batch_size=batch_size,
        shard_size=shard_size,
        fmt=fmt,
        reference=reference,
        progress=not quiet,
        meta={"model": str(directory), "seed": seed, "tasks": wanted, "dtype": dtype},
    )
    _echo_json({"out": str(out_dir), **summary.as_dict()})


@draft.command("train")
@_model_option
@click.option(
    "--data",
    "data_dirs",
    required=True,
    multiple=True,
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="Data directory (repeatable).",
)
@click.option("--out", "out_dir", required=True, type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--draft-vocab",
    type=click.IntRange(min=0),
    default=8192,
    show_default=True,
    help="Reduced draft vocabulary size (0 = the full vocabulary, sharing the target's head).",
)
@click.option(
    "--window", type=click.IntRange(min=1), help="Sliding attention window of the drafter."
)
@click.option(
    "--chunk-norms/--no-chunk-norms",
    default=True,
    show_default=True,
    help="EAGLE-3.1 per-chunk norms before fc (off: plain EAGLE-3 tensors only).",
)
@click.option(
    "--freeze-head", is_flag=True, help="Keep the reduced-vocabulary head at the target's rows."
)
@click.option(
    "--init",
    "init_dir",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="Start from this trained drafter: its architecture and weights; the draft vocabulary "
    "(same size) is chosen again from the data, trained head rows kept "
    "(--draft-vocab, --window, --no-chunk-norms and --lowrank-rank then do not apply).",
)
@click.option("--epochs", type=click.IntRange(min=1), default=2, show_default=True)
@click.option(
    "--max-steps",
    type=click.IntRange(min=1),
    help="Stop after this many steps (overrides --epochs).",
)
@click.option("--batch-size", type=click.IntRange(min=1), default=4, show_default=True)
@click.option("--lr", type=float, default=3e-4, show_default=True)
@click.option("--warmup", type=click.IntRange(min=0), default=50, show_default=True)
@click.option(
    "--ttt-steps",
    type=click.IntRange(min=5),
    default=7,
    show_default=True,
    help="Training-time-test unroll depth K (EAGLE-3: 7).",
)
@click.option(
    "--max-length", type=click.IntRange(min=8), help="Truncate sequences to this many tokens."
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--checkpoint-every", type=click.IntRange(min=0), default=200, show_default=True)
@click.option("--val-every", type=click.IntRange(min=0), default=200, show_default=True)
@click.option("--val-fraction", type=click.FloatRange(0, 0.5), default=0.02, show_default=True)
@click.option("--val-prompts", type=click.IntRange(min=0), default=6, show_default=True)
@click.option("--val-max-new-tokens", type=click.IntRange(min=0), default=96, show_default=True)
@click.option("--resume/--no-resume", default=True, show_default=True)
@click.option(
    "--lowrank-rank",
    type=click.IntRange(min=1),
    help="EAGLE-4 low-rank candidate head rank (stage 2).",
)
@click.option("--lowrank-candidates", type=click.IntRange(min=1), default=256, show_default=True)
@click.option("--lowrank-steps", type=click.IntRange(min=0), default=500, show_default=True)
@click.option("--lowrank-lr", type=float, default=2e-3, show_default=True)
@_threads_option
@click.option("--quiet", is_flag=True)
def train(
    model,
    data_dirs,
    out_dir,
    draft_vocab,
    window,
    chunk_norms,
    freeze_head,
    init_dir,
    epochs,
    max_steps,
    batch_size,
    lr,
    warmup,
    ttt_steps,
    max_length,
    seed,
    checkpoint_every,
    val_every,
    val_fraction,
    val_prompts,
    val_max_new_tokens,
    resume,
    lowrank_rank,
    lowrank_candidates,
    lowrank_steps,
    lowrank_lr,
    threads,
    quiet,
) -> None:
    """Train a drafter for the target on generated data; the result lands in OUT/drafter."""
    from engine import DrafterLoadError, DrafterMismatchError, save_drafter
    from engine import read_records, split_records
    from engine import lowrank_stage
    from engine import TrainConfig, build_drafter, train_drafter, warm_start

    _setup_threads(threads)
    if init_dir is not None:
        _refuse_with_init(
            click.get_current_context(), ("draft_vocab", "window", "chunk_norms", "lowrank_rank")
        )
    records = [r for d in data_dirs for r in read_records(d)]
    if len(records) < 2:
        raise click.ClickException(
            f"need at least 2 records, found {len(records)} in {', '.join(map(str, data_dirs))}"
        )
    train_records, val_records = split_records(records, val_fraction)
    target, tokenizer, _ = _load_target(model, quiet)
    eos = _eos_ids(target, tokenizer)
    if init_dir is not None:
        try:
            drafter, info = warm_start(target, init_dir, train_records, always_include=eos)
        except (DrafterLoadError, DrafterMismatchError) as exc:
            raise click.ClickException(f"--init {init_dir}: {exc}") from None
    else:
        drafter, info = build_drafter(
            target,
            train_records,
            draft_vocab_size=draft_vocab or None,
            window=window,
            chunk_norms=chunk_norms,
            lowrank_rank=lowrank_rank,
            lowrank_candidates=lowrank_candidates,
            always_include=eos,
            seed=seed,
        )
    log = (
        (lambda text: None)
        if quiet
        else (lambda text: click.echo(f"promptx draft: {text}", err=True))
    )
    log(
        f"{len(train_records)} training / {len(val_records)} validation records; "
        f"vocabulary {json.dumps(info)}"
    )
    config = TrainConfig(
        epochs=epochs,
        max_steps=max_steps,
        batch_size=batch_size,
        lr=lr,
        warmup_steps=warmup,
        freeze_head=freeze_head,
        ttt_steps=ttt_steps,
        seed=seed,
        max_length=max_length,
        checkpoint_every=checkpoint_every,
        val_every=val_every,
        val_prompts=val_prompts,
        val_max_new_tokens=val_max_new_tokens,
    )
    result = train_drafter(
        target,
        drafter,
        train_records,
        out_dir,
        config,
        val_records=val_records,
        eos_ids=eos,
        resume=resume,
        progress=not quiet,
        log=log,
    )
    report = {
        "drafter": result.drafter_dir,
        "steps": result.steps,
        "steps_per_s": round(result.steps_per_s, 4),
        "seconds": round(result.seconds, 1),
        "vocab": info,
        "last": result.last,
        "validation": result.validation,
    }
    if lowrank_rank and lowrank_steps:
        stage = lowrank_stage(
            target,
            drafter,
            train_records,
            val_records,
            steps=lowrank_steps,
            lr=lowrank_lr,
            ttt_steps=ttt_steps,
            batch_size=batch_size,
            max_length=max_length,
            seed=seed,
            progress=not quiet,
        )
        save_drafter(drafter, out_dir / "drafter", target=target)
        report["lowrank"] = {
            "recall_before": stage.recall_before,
            "recall_after": stage.recall_after,
            "kl_before": stage.kl_before,
            "kl_after": stage.kl_after,
            "rows": stage.rows,
            "seconds": round(stage.seconds, 1),
        }
    (Path(out_dir) / "summary.json").write_text(json.dumps(report, indent=2) + "\n")
    _echo_json(report)


def _refuse_with_init(ctx: click.Context, names: Sequence[str]) -> None:
    """--init fixes the drafter's architecture: options that would change it are an error."""
    given = [
        f"--{n.replace('_', '-')}"
        for n in names
        if ctx.get_parameter_source(n) not in (None, click.core.ParameterSource.DEFAULT)
    ]
    if given:
        raise click.UsageError(
            f"{', '.join(given)} cannot be combined with --init (the drafter keeps its own)"
        )


@draft.command("eval")
@_model_option
@click.option(
    "--drafter",
    "drafter_dir",
    required=True,
    type=click.Path(path_type=Path, file_okay=False, exists=True),
)
@click.option(
    "--data",
    "data_dir",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="Use the validation split of this data directory (default: held-out prompt sets).",
)
@click.option(
    "--val-fraction",
    type=click.FloatRange(0, 0.5),
    default=0.02,
    show_default=True,
    help="As given to 'train' (which records are held out).",
)
@_prompts_option
@click.option(
    "--prompts",
    "n_prompts",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Prompts per task.",
)
@click.option("--max-new-tokens", type=click.IntRange(min=1), default=128, show_default=True)
@click.option(
    "--sampled", is_flag=True, help="Sample at the profile temperature instead of greedy decoding."
)
@click.option("--compare", is_flag=True, help="Also time plain decoding for the speed-up.")
@click.option("--budget", type=click.IntRange(min=0), default=16, show_default=True)
@click.option("--depth", type=click.IntRange(min=1), default=6, show_default=True)
@click.option("--top-k", type=click.IntRange(min=1), default=4, show_default=True)
@click.option("--seed", type=int, default=1, show_default=True)
@_threads_option
@click.option("--quiet", is_flag=True)
def eval_(
    model,
    drafter_dir,
    data_dir,
    val_fraction,
    prompts_dir,
    n_prompts,
    max_new_tokens,
    sampled,
    compare,
    budget,
    depth,
    top_k,
    seed,
    threads,
    quiet,
) -> None:
    """tau per task of a drafter on held-out prompts (optionally with the speed-up over plain
    decoding)."""
    from engine import decode_autoregressive
    from engine import SamplingParams
    from engine import StopChecker
    from engine import load_drafter
    from engine import TreeConfig
    from engine import read_records, split_records
    from engine import measure_tau

    _setup_threads(threads)
    from ..models import prompt_style_of

    target, tokenizer, directory = _load_target(model, quiet)
    eos = _eos_ids(target, tokenizer)
    drafter = load_drafter(drafter_dir, target)
    groups: dict[str, list[tuple[list[int], float, float, float]]] = {}
    if data_dir is not None:
        _, val = split_records(read_records(data_dir), val_fraction)
        for r in val:
            groups.setdefault(r.meta.get("task", "all"), []).append(
                (
                    r.prompt_ids,
                    r.meta.get("temperature", 0.7) or 0.7,
                    r.meta.get("top_p", 0.9),
                    r.meta.get("repetition_penalty", 1.0),
                )
            )
    else:
        per_task = load_prompt_specs(prompts_dir, TASKS, seed=seed, heldout=True)
        for task in TASKS:
            items = build_items(
                tokenizer,
                registry_for(None),
                {task: per_task.get(task, [])},
                limit=n_prompts,
                seed=seed,
                greedy_fraction=0.0,
                prompt_style=prompt_style_of(directory),
            )
            groups[task] = [
                (
                    list(it.prompt_ids),
                    it.params.temperature,
                    it.params.top_p,
                    it.params.repetition_penalty,
                )
                for it in items
            ]
    tree = TreeConfig(budget, depth, top_k)
    report = {}
    for task, rows in groups.items():
        rows = rows[:n_prompts]
        if not rows:
            continue
        temperature = rows[0][1] if sampled else 0.0
        res = measure_tau(
            target,
            drafter,
            [r[0] for r in rows],
            eos,
            max_new_tokens=max_new_tokens,
            tree=tree,
            repetition_penalty=rows[0][3],
            temperature=temperature,
            top_p=rows[0][2],
            seed=seed,
        )
        if compare:
            started, produced = time.perf_counter(), 0
            for i, r in enumerate(rows):
                params = SamplingParams(
                    temperature=temperature,
                    top_p=r[2],
                    repetition_penalty=r[3],
                    max_new_tokens=max_new_tokens,
                    seed=seed + i,
                )
                stop = StopChecker(eos, max_new_tokens)
                produced += sum(1 for _ in decode_autoregressive(target, r[0], params, stop))
            plain = produced / (time.perf_counter() - started)
            res["plain_tokens_per_s"] = round(plain, 2)
            res["speedup"] = round(res["tokens_per_s"] / plain, 3) if plain else 0.0
        report[task] = res
        if not quiet:
            click.echo(f"promptx draft: {task}: {json.dumps(res)}", err=True)
    _echo_json(
        {"drafter": str(drafter_dir), "mode": "sampled" if sampled else "greedy", "tasks": report}
    )


# ---- export --------------------------------------------------------------------------------------
_TARGET_PLACEHOLDER = "TARGET"


def _drafter_path(ref: str) -> Path:
    """A drafter directory, or the name of one shipped in promptx/drafters/."""
    from ..backends.drafters import SHIPPED_DIR

    path = Path(ref).expanduser()
    if path.is_dir():
        return path
    if (SHIPPED_DIR / ref / "config.json").is_file():
        return SHIPPED_DIR / ref
    shipped = (
        sorted(p.name for p in SHIPPED_DIR.iterdir() if (p / "config.json").is_file())
        if SHIPPED_DIR.is_dir()
        else []
    )
    raise InvalidInputError(
        f"no drafter directory {ref!r} and no shipped drafter of that name "
        f"(shipped: {', '.join(shipped) or 'none'})"
    )


def _source_config(directory: Path) -> dict:
    try:
        raw = json.loads((directory / "config.json").read_text())
    except (OSError, json.JSONDecodeError):
        return {}  # load_drafter says what is wrong with it
    return raw if isinstance(raw, dict) else {}


def launch_lines(out_dir: Path, fmt: str, target: str, k: int) -> list[str]:
    """The commands that serve the target with the exported drafter (paths filled in,
    shell-quoted)."""
    d, t = shlex.quote(str(out_dir)), shlex.quote(target)
    spec = json.dumps(
        {"method": "eagle3", "model": str(out_dir), "num_speculative_tokens": k},
        separators=(",", ":"),
    )
    lines = ["vLLM:", f"  vllm serve {t} --speculative-config {shlex.quote(spec)}"]
    if fmt == "speculators":
        if target != _TARGET_PLACEHOLDER:  # the config names the verifier by this path
            lines.append(
                f"  (or: vllm serve {d}, which serves the verifier named in its config.json)"
            )
        return lines + [
            "SGLang and llama.cpp read the flat eagle3 layout: "
            "export with --format eagle3 for them."
        ]
    sglang = (
        f"  python -m sglang.launch_server --model-path {t} --speculative-algorithm EAGLE3 "
        f"--speculative-draft-model-path {d} --speculative-num-steps 3 --speculative-eagle-topk 4 "
        "--speculative-num-draft-tokens 16"
    )
    lines += [
        "SGLang:",
        sglang,
        "llama.cpp:",
        f"  python convert_hf_to_gguf.py {t} --outfile target.gguf",
        f"  python convert_hf_to_gguf.py {d} --target-model-dir {t} --outfile draft.gguf",
        "  llama-server -m target.gguf -md draft.gguf --spec-type draft-eagle3",
        "  (the converter reads the tap layers from "
        "eagle_config.eagle_aux_hidden_state_layer_ids, which the export omits; check that "
        "llama-server logs the inputs of the same layers as promptx taps: some converter versions "
        "fall back to another model's [1, 18, 35])",
    ]
    return lines


@draft.command("export")
@click.argument("drafter_ref", metavar="DRAFTER")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["eagle3", "speculators"]),
    default="eagle3",
    show_default=True,
    help="eagle3: vLLM, SGLang, llama.cpp; speculators: vLLM's newer layout.",
)
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="Directory to write config.json and model.safetensors into.",
)
@_model_option
@click.option(
    "--target-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="The target as a Hugging Face directory the engines load, filled into the printed "
    "commands (promptx models export --out DIR writes the embedded one).",
)
@click.option(
    "--num-speculative-tokens",
    "k",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="K in the vLLM command and the speculators config.",
)
@click.option("--quiet", is_flag=True)
def export(drafter_ref, fmt, out_dir, model, target_dir, k, quiet) -> None:
    """Write DRAFTER (a directory or a shipped drafter's name) for vLLM, SGLang and llama.cpp.

    The drafter is checked against the target (--model, default the embedded one) and
    refused where the layout cannot represent it; the launch commands are printed.
    """
    from engine import DrafterLoadError, DrafterMismatchError, load_drafter
    from engine import ExportError, check_declared_taps, default_taps, export_drafter

    drafter_dir = _drafter_path(drafter_ref)
    if out_dir.resolve() == drafter_dir.resolve():
        raise InvalidInputError(
            f"--out {out_dir} is the drafter's own directory: choose another one"
        )
    source, directory, generator = load_generator(model, "float32", quiet=quiet)
    target = generator.model
    try:
        check_declared_taps(_source_config(drafter_dir), target.config.num_hidden_layers)
        drafter = load_drafter(drafter_dir, target)
        verifier = str(target_dir.resolve()) if target_dir else source.name
        archs = _source_config(directory).get("architectures") or ["LlamaForCausalLM"]
        result = export_drafter(
            drafter,
            out_dir,
            fmt,
            target=target,
            verifier_name=verifier,
            verifier_architectures=archs,
            speculative_tokens=k,
        )
    except ExportError as exc:
        raise InvalidInputError(f"cannot export {drafter_dir} as {fmt}: {exc}") from None
    except (DrafterLoadError, DrafterMismatchError) as exc:
        raise ModelError(f"drafter {drafter_dir}: {exc}") from None
    out = result.directory.resolve()
    click.echo(f"wrote {out} ({fmt}: {', '.join(result.files)}) for target {source.name}")
    if not quiet:
        for note in result.notes:
            click.echo(f"note: {note}", err=True)
    taps = list(default_taps(target.config.num_hidden_layers))
    if target_dir is None:
        click.echo(
            f"{_TARGET_PLACEHOLDER} below: the target as a Hugging Face directory "
            f"(promptx models export --out {_TARGET_PLACEHOLDER} writes {source.name}); "
            f"the drafter reads the inputs of its layers {taps}"
        )
    else:
        click.echo(
            f"target {target_dir.resolve()}: the drafter reads the inputs of its layers {taps}"
        )
    target_text = str(target_dir.resolve()) if target_dir else _TARGET_PLACEHOLDER
    for line in launch_lines(out, fmt, target_text, k):
        click.echo(line)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(draft())
