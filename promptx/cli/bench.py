"""``promptx bench PROMPT_FILE``: measure the speculative decoder against plain decoding and peers.

(With ``--latency`` it times warm ``enhance`` calls stage by stage instead:
``promptx.cli.bench_latency``.)

This file is the promptx side of the benchmark: it parses the options, reads
the prompt file (``promptx.prompt_files``), renders each prompt through its
template (Spec-Bench questions as raw chat) into token ids, loads the model
and drafter, calls ``engine.bench.run_bench`` and writes the results: a
markdown summary on stdout and, with ``--out DIR``, ``bench.json`` (schema:
docs/bench.md), ``summary.md`` and PNG plots (when matplotlib is installed).
It does not measure anything itself.

Register it on the CLI group with ``main.add_command(bench)``.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..errors import InvalidInputError, PromptTooLongError, UnknownTargetError
from ..options import STRENGTHS
from ..prompt_files import FORMATS, PromptSpec, detect_format, read_prompt_file
from .bench_latency import DEFAULT_PROMPTS, LATENCY_PEERS, run_latency_bench, write_latency_outputs
from .common import MODEL_HELP, load_generator

RANDOM_DRAFTER_WARNING = (
    "no trained drafter for this model: using a randomly initialised drafter, "
    "so tau, hit rates and speedups are meaningless (pass --drafter PATH)"
)


# ---- options -------------------------------------------------------------------------------------
def _split(value: str) -> list[str]:
    return [part.strip().lower() for part in value.split(",") if part.strip()]


def parse_budgets(value: str) -> tuple[int, ...]:
    try:
        budgets = tuple(int(part) for part in _split(value))
    except ValueError:
        raise InvalidInputError(
            f"--budgets {value!r}: give comma-separated integers such as 8,16"
        ) from None
    if not budgets or min(budgets) < 1:
        raise InvalidInputError(f"--budgets {value!r}: every budget must be >= 1")
    return tuple(dict.fromkeys(budgets))


def parse_modes(value: str) -> tuple[str, ...]:
    from engine.bench import MODES

    modes = tuple(dict.fromkeys(_split(value)))
    unknown = [m for m in modes if m not in MODES]
    if not modes or unknown:
        raise InvalidInputError(f"--modes {value!r}: choose from {', '.join(MODES)}")
    return modes


def parse_peers(value: str) -> tuple[str, ...]:
    from engine.bench import PEERS

    peers = tuple(dict.fromkeys(p for p in _split(value) if p != "none"))
    unknown = [p for p in peers if p not in PEERS]
    if unknown:
        raise InvalidInputError(f"--peers {value!r}: choose from {', '.join(PEERS)} (or none)")
    return peers


def check_concurrency(value: int) -> None:
    from engine.bench import MAX_CONCURRENCY

    if not 1 <= value <= MAX_CONCURRENCY:
        raise InvalidInputError(
            f"--concurrency {value}: give a number of concurrent sequences from 1 to "
            f"{MAX_CONCURRENCY}"
        )


# ---- prompts -------------------------------------------------------------------------------------
def render_prompt(
    spec: PromptSpec, tokenizer, default_target: str, registry, prompt_style: str = "full"
) -> tuple[list[int], str]:
    """Token ids of one prompt and its task label (profile task, or Spec-Bench category)."""
    if spec.raw_chat:
        return tokenizer.encode_chat(
            [{"role": "user", "content": spec.text}]
        ), spec.category or "chat"
    try:
        profile = registry.get(spec.task or default_target)
        return tokenizer.encode_chat(_messages(spec, profile, prompt_style)), profile.task
    except (InvalidInputError, UnknownTargetError) as exc:
        raise InvalidInputError(f"{spec.source}: {exc}") from None


def _messages(spec: PromptSpec, profile, prompt_style: str = "full") -> list[dict[str, str]]:
    from ..profiles.render import render_messages

    facts = None
    if spec.image is not None:
        from ..images import load_image_facts

        facts = load_image_facts(spec.image).describe()
    return render_messages(profile, spec.text, image_facts=facts, prompt_style=prompt_style)


def bench_prompts(
    specs, generator, default_target: str, max_new_tokens: int, prompt_style: str = "full"
):
    """PromptSpecs -> engine BenchPrompts, checked against the context window."""
    from engine.bench import BenchPrompt
    from engine import ContextOverflowError

    from ..profiles.registry import default_registry

    registry, prompts = default_registry(), []
    for spec in specs:
        ids, task = render_prompt(spec, generator.tokenizer, default_target, registry, prompt_style)
        try:
            generator.check_fits(len(ids), max_new_tokens)
        except ContextOverflowError as exc:
            raise PromptTooLongError(f"{spec.source}: {exc}") from None
        prompts.append(BenchPrompt(tuple(ids), task, spec.source))
    return prompts


# ---- model and drafter ---------------------------------------------------------------------------
def choose_drafter(generator, path: Path | None, seed: int) -> tuple[object, dict]:
    """(drafter, report entry): --drafter PATH, else a shipped one, else a random one."""
    from ..backends.drafters import find_drafter, load_drafter_for

    path = path if path is not None else find_drafter(generator.model)
    if path is not None:
        drafter, _ = load_drafter_for(generator.model, Path(path))
        return drafter, {"path": str(path), "random": False}
    from engine.bench import random_drafter

    return random_drafter(generator.model, seed), {"path": None, "random": True}


def copy_drafts_for(generator, drafter_info: dict | None):
    """The ``CopyDrafter`` of the harness run: the copy table beside a trained drafter, loaded as
    the embedded backend loads it ($PROMPTX_COPY_DRAFTS=0: none), else None."""
    if not drafter_info or drafter_info["random"]:
        return None
    from engine import CopyDrafter

    from ..backends.drafters import load_copy_table

    table = load_copy_table(generator.model, Path(drafter_info["path"]))
    return None if table is None else CopyDrafter(table)


# ---- outputs -------------------------------------------------------------------------------------
def _fmt(value, digits: int = 2) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def _table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(_fmt(c) for c in row) + " |" for row in rows]


def _runs_table(report: dict) -> list[str]:
    rows = [
        [
            name,
            r["tokens_per_s"]["median"],
            r["decode_tokens_per_s"]["median"],
            r["latency_s"]["median"],
            r["speedup"],
            r["tau"],
            (r["hit_rate"] or [None])[0],
            r["lossless"],
        ]
        for name, r in report["runs"].items()
    ]
    for name, p in report["peers"].items():
        rows.append(
            [f"{name} (peer)", f"skipped: {p['skipped']}", "", "", "", "", "", ""]
            if not p["available"]
            else [
                f"{name} (peer)",
                p["tokens_per_s"]["median"],
                (p["decode_tokens_per_s"] or {}).get("median"),
                p["latency_s"]["median"],
                p["speedup"],
                "",
                "",
                f"same output: {_fmt(p['same_output_as_engine'])}",
            ]
        )
    return _table(
        [
            "run",
            "tok/s (median)",
            "decode tok/s (median)",
            "latency s (median)",
            "speedup",
            "tau",
            "hit@1",
            "lossless",
        ],
        rows,
    )


def _tree_chain_table(report: dict) -> list[str]:
    rows = [
        [
            r["budget"],
            r["chain_tau"],
            r["tree_tau"],
            r["tree_tau_gain"],
            r["chain_speedup"],
            r["tree_speedup"],
        ]
        for r in report["tree_vs_chain"]
    ]
    return ["", "### tree vs chain (equal budget)", ""] + _table(
        ["budget", "chain tau", "tree tau", "tree gain", "chain speedup", "tree speedup"], rows
    )


def _speculative_tables(spec: dict[str, dict]) -> list[str]:
    tasks = sorted({t for r in spec.values() for t in r["tau_by_task"]})
    depth = max(len(r["hit_rate"]) for r in spec.values())
    lines = ["", "### tau per task", ""]
    lines += _table(
        ["run", *tasks], [[n, *(r["tau_by_task"].get(t) for t in tasks)] for n, r in spec.items()]
    )
    lines += ["", "### hit rate per draft position", ""]
    lines += _table(
        ["run", *(f"@{d + 1}" for d in range(depth))],
        [[n, *(r["hit_rate"] + [None] * depth)[:depth]] for n, r in spec.items()],
    )
    lines += ["", "### tau per quartile of target entropy (Q1 = most certain)", ""]
    return lines + _table(
        ["run", "Q1", "Q2", "Q3", "Q4"],
        [[n, *(q["tau"] for q in r["tau_by_entropy_quartile"])] for n, r in spec.items()],
    )


def markdown_summary(report: dict) -> str:
    """The report as markdown: runs and peers, tree vs chain, tok/s and tau per task, hit rates,
    entropy quartiles."""
    m, s = report["machine"], report["settings"]
    name = (report.get("model") or {}).get("name", "model")
    lines = [
        f"## promptx bench: {name}, {m['dtype']}, {m['torch_threads']} threads, "
        f"{s['num_prompts']} prompts x {s['max_new_tokens']} new tokens, "
        f"temperature {s['temperature']}",
        "",
    ] + _runs_table(report)
    if report["tree_vs_chain"]:
        lines += _tree_chain_table(report)
    tasks = sorted({t for r in report["runs"].values() for t in r["tokens_per_s_by_task"]})
    lines += ["", "### tok/s per task (median)", ""] + _table(
        ["run", *tasks],
        [
            [n, *(r["tokens_per_s_by_task"].get(t) for t in tasks)]
            for n, r in report["runs"].items()
        ],
    )
    spec = {n: r for n, r in report["runs"].items() if r["mode"] != "none"}
    if spec:
        lines += _speculative_tables(spec)
    lines += (
        [""]
        + [f"warning: {w}" for w in report["warnings"]]
        + [f"note: {n}" for n in report["notes"]]
    )
    return "\n".join(lines).rstrip() + "\n"


def _speculative(report: dict) -> dict[str, dict]:
    return {n: r for n, r in report["runs"].items() if r["mode"] != "none"}


def _grouped_bars(ax, groups: list[str], series: dict[str, list]) -> None:
    """One bar per (group, series), series side by side within each group."""
    width = 0.8 / max(len(series), 1)
    for i, (label, values) in enumerate(series.items()):
        ax.bar(
            [g + i * width for g in range(len(groups))],
            [v or 0 for v in values],
            width,
            label=label,
        )
    ax.set_xticks([g + 0.4 - width / 2 for g in range(len(groups))], groups)


def _plot_tau_per_task(ax, report: dict) -> None:
    spec = _speculative(report)
    tasks = sorted({t for r in spec.values() for t in r["tau_by_task"]})
    _grouped_bars(ax, tasks, {n: [r["tau_by_task"].get(t) for t in tasks] for n, r in spec.items()})
    ax.set_ylabel("tau (tokens per target pass)")


def _plot_tree_vs_chain(ax, report: dict) -> None:
    for mode, rows in report["budget_scaling"].items():
        ax.plot([r["budget"] for r in rows], [r["tau"] or 0 for r in rows], marker="o", label=mode)
    ax.set_xlabel("verification budget (draft tokens)")
    ax.set_ylabel("tau")


def _plot_hit_rate(ax, report: dict) -> None:
    for name, r in _speculative(report).items():
        ax.plot(
            range(1, len(r["hit_rate"]) + 1),
            [h or 0 for h in r["hit_rate"]],
            marker="o",
            label=name,
        )
    ax.set_xlabel("draft position along the accepted path")
    ax.set_ylabel("hit rate")


def _plot_tau_entropy(ax, report: dict) -> None:
    series = {
        n: [q["tau"] for q in r["tau_by_entropy_quartile"]] for n, r in _speculative(report).items()
    }
    _grouped_bars(ax, ["Q1 (low)", "Q2", "Q3", "Q4 (high)"], series)
    ax.set_ylabel("tau")


def _plot_tokens_per_s(ax, report: dict) -> None:
    named = [(n, r["tokens_per_s"]["median"]) for n, r in report["runs"].items()]
    named += [
        (f"{n} (peer)", p["tokens_per_s"]["median"])
        for n, p in report["peers"].items()
        if p["available"]
    ]
    ax.bar([n for n, _ in named], [v or 0 for _, v in named])
    ax.set_ylabel("tokens/s (median over prompts)")
    ax.tick_params(axis="x", rotation=30)


# file name, title, drawing, needs speculative runs
PLOTS = (
    ("tau_per_task.png", "tau per task", _plot_tau_per_task, True),
    ("tree_vs_chain.png", "tau by verification budget", _plot_tree_vs_chain, True),
    ("hit_rate.png", "hit rate per draft position", _plot_hit_rate, True),
    ("tau_entropy.png", "tau per quartile of target entropy", _plot_tau_entropy, True),
    ("tokens_per_s.png", "decoding speed per run and peer", _plot_tokens_per_s, False),
)
PLOT_NAMES = tuple(p[0] for p in PLOTS)


def write_plots(report: dict, out: Path) -> list[str]:
    """Write the PNG plots that have data; return their file names. Needs matplotlib (extra
    ``plot``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written, speculative = [], bool(_speculative(report))
    for name, title, draw, needs_speculative in PLOTS:
        if needs_speculative and not speculative:
            continue
        fig, ax = plt.subplots(figsize=(7, 4))
        draw(ax, report)
        ax.set_title(title, fontsize=10)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / name, dpi=100)
        plt.close(fig)
        written.append(name)
    return written


def write_outputs(report: dict, out: Path | None) -> str:
    """Write bench.json, summary.md and plots under ``out``; return the markdown summary."""
    if out is None:
        report["notes"].append("no --out DIR given: JSON and plots were not written")
        return markdown_summary(report)
    out.mkdir(parents=True, exist_ok=True)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        report["notes"].append(
            "matplotlib is not installed: plots skipped "
            "(pip install -e '.[plot]' in promptx's checkout)"
        )
    else:
        report["plots"] = write_plots(report, out)
    summary = markdown_summary(report)
    (out / "bench.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "summary.md").write_text(summary)
    return summary


# ---- the command ---------------------------------------------------------------------------------
SUITES_DIR = Path(__file__).resolve().parent.parent / "suites"


def suite_file(name: str) -> Path:
    """The prompt file of a suite shipped in promptx/suites (e.g. enhance-400)."""
    path = SUITES_DIR / f"{name}.jsonl"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in SUITES_DIR.glob("*.jsonl"))) or "none"
        raise InvalidInputError(f"unknown suite {name!r}; shipped suites: {known}")
    return path


@click.command("bench")
@click.argument("prompt_file", type=click.Path(path_type=Path, dir_okay=False), required=False)
@click.option(
    "--suite",
    help="A suite shipped with promptx instead of PROMPT_FILE: enhance-400 (100 prompts each "
    "of text-to-video, image-to-video, text-to-image, image-to-image, tasks in turn).",
)
@click.option(
    "--format",
    "file_format",
    type=click.Choice(("auto", *FORMATS)),
    default="auto",
    show_default=True,
    help="Prompt file format: text (one per line), jsonl (prompt/task/image), "
    "specbench (turns/category).",
)
@click.option(
    "-t",
    "--target",
    "--task",
    "target",
    default="video",
    show_default=True,
    help="Template for plain-text prompts and JSONL lines without a task.",
)
@click.option("--model", help=MODEL_HELP)
@click.option(
    "--drafter",
    type=click.Path(path_type=Path, file_okay=False),
    help="Drafter checkpoint (default: the shipped one, else a random one with a warning).",
)
@click.option(
    "--max-new-tokens",
    type=click.IntRange(1, 4096),
    help="Token budget of every decode [default: 128; with --latency: the target profile's].",
)
@click.option(
    "--temperature",
    type=click.FloatRange(0, 2),
    help="0 = greedy [default: 0; with --latency: the target profile's].",
)
@click.option(
    "--budgets", default="8,16", show_default=True, help="Verification budgets (draft tokens)."
)
@click.option(
    "--modes",
    default="none,chain,tree,harness",
    show_default=True,
    help="none, chain, tree, harness (the cost-aware planner; uses the stored cost table or a "
    "quick calibration, and prices copy drafts from the table beside a trained drafter, as "
    "enhance does; PROMPTX_COPY_DRAFTS=0: without them).",
)
@click.option(
    "--concurrency",
    type=int,
    default=1,
    show_default=True,
    help="Prompts decoded together in one batch per run (e.g. 8).",
)
@click.option(
    "--num-prompts",
    type=click.IntRange(min=1),
    help=f"Use the first N prompts of the file [default: all; with --latency: {DEFAULT_PROMPTS}].",
)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option(
    "--peers",
    help="Peers to compare: transformers, llamacpp, mixed, int8 (promptx's plain decoder in that "
    "precision), or none [default: transformers,llamacpp; with --latency: llamacpp, the "
    "only peer it measures].",
)
@click.option(
    "--dtype",
    default="auto",
    show_default=True,
    help="float32, bfloat16, int4 or auto (int4 where it is faster and lossless, else bf16 where "
    "native, else float32).",
)
@click.option("--device", help="cpu or cuda (default: cuda when available).")
@click.option(
    "--cuda-graphs/--no-cuda-graphs",
    default=None,
    help="On CUDA: replay the target's batch-1 steps and verification passes from CUDA graphs "
    "(default: on, unless PROMPTX_CUDA_GRAPHS=0). No effect on a CPU.",
)
@click.option(
    "--threads", type=click.IntRange(min=1), help="torch threads (default: torch's own choice)."
)
@click.option(
    "--no-warmup",
    is_flag=True,
    help="Skip the warm-up decode of each run (--latency: the warm-up calls).",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    help="Write bench.json, summary.md, plots.",
)
@click.option(
    "--latency",
    is_flag=True,
    help="Time warm enhance calls instead (model loaded once, one warm-up call per target): "
    "per-request latency median and p90 by stage (render, batch wait, constraint, prefill, decode, "
    "scoring, clean-up, other), and llama.cpp on the same prompt ids and token counts. --modes, "
    "--budgets and --concurrency do not apply.",
)
@click.option(
    "--strength",
    type=click.Choice(STRENGTHS),
    default="full",
    show_default=True,
    help="With --latency: the strength of the enhance calls.",
)
def bench(
    prompt_file,
    suite,
    file_format,
    target,
    model,
    drafter,
    max_new_tokens,
    temperature,
    budgets,
    modes,
    concurrency,
    num_prompts,
    seed,
    peers,
    dtype,
    device,
    cuda_graphs,
    threads,
    no_warmup,
    out,
    latency,
    strength,
) -> None:
    """Benchmark speculative decoding on the prompts of PROMPT_FILE (or of a shipped --suite); with
    --latency, the per-request latency of warm enhance calls."""
    if (prompt_file is None) == (suite is None):
        raise click.UsageError("give a PROMPT_FILE or --suite NAME (one of them)")
    prompt_file = prompt_file or suite_file(suite)
    check_concurrency(concurrency)
    if threads is not None:
        import torch

        torch.set_num_threads(threads)
    if latency:
        _latency(
            prompt_file,
            file_format,
            target,
            model,
            drafter,
            max_new_tokens,
            temperature,
            num_prompts,
            seed,
            peers,
            dtype,
            device,
            no_warmup,
            out,
            strength,
        )
        return
    max_new_tokens = 128 if max_new_tokens is None else max_new_tokens
    temperature = 0.0 if temperature is None else temperature
    peers = "transformers,llamacpp" if peers is None else peers
    from engine.bench import BenchConfig, BenchError, close_peers, make_peers, run_bench

    try:
        config = BenchConfig(
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            seed=seed,
            budgets=parse_budgets(budgets),
            modes=parse_modes(modes),
            concurrency=concurrency,
            warmup=not no_warmup,
        )
    except BenchError as exc:
        raise InvalidInputError(str(exc)) from None
    peer_names = parse_peers(peers)
    specs = read_prompt_file(prompt_file, file_format, limit=num_prompts)
    source, directory, generator = load_generator(model, dtype, device, cuda_graphs=cuda_graphs)
    from ..models import prompt_style_of

    prompts = bench_prompts(specs, generator, target, max_new_tokens, prompt_style_of(directory))
    speculative = any(m != "none" for m in config.modes)
    drafter, drafter_info = (
        choose_drafter(generator, drafter, seed) if speculative else (None, None)
    )
    say = lambda message: click.echo(f"promptx bench: {message}", err=True)  # noqa: E731
    if peer_names:
        say(f"starting peers in their own processes: {', '.join(peer_names)}")
    peer_list, skipped = make_peers(peer_names, generator, directory, source.gguf)
    try:
        report = run_bench(
            generator,
            drafter,
            prompts,
            config,
            peers=peer_list,
            progress=say,
            copies=copy_drafts_for(generator, drafter_info),
        )
    finally:
        close_peers(peer_list)
    report.update(
        model={
            "name": source.name,
            "directory": str(directory),
            "gguf": None if source.gguf is None else str(source.gguf),
        },
        drafter=drafter_info,
        plots=[],
        prompt_file={
            "path": str(prompt_file),
            "default_target": target,
            "format": detect_format(prompt_file) if file_format == "auto" else file_format,
        },
    )
    add_notes(report, skipped)
    report["notes"] += [peer.note for peer in peer_list if getattr(peer, "note", None)]
    click.echo(write_outputs(report, out), nl=False)


def _latency(
    prompt_file,
    file_format,
    target,
    model,
    drafter,
    max_new_tokens,
    temperature,
    num_prompts,
    seed,
    peers,
    dtype,
    device,
    no_warmup,
    out,
    strength,
) -> None:
    """``--latency``: warm enhance calls, stage by stage (``promptx.cli.bench_latency``)."""
    specs = read_prompt_file(prompt_file, file_format, limit=num_prompts or DEFAULT_PROMPTS)
    say = lambda message: click.echo(f"promptx bench: {message}", err=True)  # noqa: E731
    report = run_latency_bench(
        specs,
        target=target,
        model=model,
        drafter=drafter,
        dtype=dtype,
        device=device,
        strength=strength,
        seed=seed,
        max_new_tokens=max_new_tokens,
        temperature=temperature,
        warmup=not no_warmup,
        peer_names=parse_peers(peers or ",".join(LATENCY_PEERS)),
        say=say,
    )
    report["prompt_file"] = {
        "path": str(prompt_file),
        "default_target": target,
        "format": detect_format(prompt_file) if file_format == "auto" else file_format,
    }
    click.echo(write_latency_outputs(report, out), nl=False)


def add_notes(report: dict, skipped_peers: dict) -> None:
    """Skipped peers, the random-drafter warning and the method notes."""
    from engine.bench import CONCURRENCY_NOTE

    report["peers"].update(skipped_peers)
    if report["drafter"] and report["drafter"]["random"]:
        report["warnings"].append(RANDOM_DRAFTER_WARNING)
    report["notes"] += [
        f"peer {name} skipped: {entry['skipped']}"
        for name, entry in report["peers"].items()
        if not entry["available"]
    ]
    if report["settings"]["concurrency"] > 1:
        report["notes"].append(CONCURRENCY_NOTE)
    report["notes"].append(f"entropy method: {report['entropy']['method']}")
