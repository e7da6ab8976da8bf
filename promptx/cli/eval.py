"""``promptx eval PROMPT_FILE``: the faithfulness report of promptx (and of a reference).

Enhances every prompt of a file (the formats of ``promptx bench``), assesses
each result with ``promptx.quality.assess`` and reports the pass rate and each
finding kind's rate per task and target, with latency. ``--reference FILE``
assesses someone else's enhanced prompts for the same inputs (line-aligned
text, or JSON lines with a "text" or "output" field) in the same table.
A promptx row passes when it was enhanced (no fallback, not skipped) and its text passes;
skipped rows (a long prompt, a language the model cannot read) are counted apart.

Register it on the CLI group with ``main.add_command(eval_command)``.
Not here: the assessment itself (``promptx.quality``).
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import click

from ..errors import InvalidInputError
from ..options import STRENGTHS
from ..quality import KINDS, assess
from .common import MODEL_HELP

__all__ = ["eval_command", "read_reference", "summarize"]


def read_reference(path: Path, expected: int) -> list[str]:
    """Enhanced prompts, one per input line; a length mismatch names the file."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{path}: cannot read the reference file: {exc}") from exc
    while lines and not lines[-1].strip():
        lines.pop()
    texts = [_reference_text(path, i, line) for i, line in enumerate(lines, 1)]
    if len(texts) < expected:
        raise InvalidInputError(
            f"{path}:{len(texts) + 1}: the reference has {len(texts)} lines, "
            f"the prompt file {expected}"
        )
    return texts[:expected]


def _reference_text(path: Path, lineno: int, line: str) -> str:
    if not line.lstrip().startswith("{"):
        return line.strip()
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from exc
    text = obj.get("text", obj.get("output")) if isinstance(obj, dict) else None
    if not isinstance(text, str):
        raise InvalidInputError(f'{path}:{lineno}: a JSON line needs a "text" or "output" string')
    return text


def summarize(rows: list[dict]) -> list[dict]:
    """One line per (source, task, target): count, pass rate, each kind's rate, latency."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows:
        groups[(row["source"], row["task"], row["target"])].append(row)
        groups[(row["source"], "all", "all")].append(row)
    out = []
    for (source, task, target), items in sorted(groups.items()):
        n = len(items)
        latencies = [r["latency_s"] for r in items if r.get("latency_s") is not None]
        line = dict(
            source=source,
            task=task,
            target=target,
            n=n,
            pass_rate=round(sum(r["passed"] for r in items) / n, 4),
            fallback_rate=round(sum(r.get("fallback", False) for r in items) / n, 4),
            skipped_rate=round(sum(r.get("skipped", False) for r in items) / n, 4),
            median_latency_s=round(statistics.median(latencies), 3) if latencies else None,
        )
        for kind in KINDS:
            line[kind] = round(sum(kind in r["kinds"] for r in items) / n, 4)
        out.append(line)
    return out


def _markdown(summary: list[dict]) -> str:
    head = ["source", "task", "target", "n", "pass", *KINDS, "fallback", "skipped", "median s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in summary:
        cells = [
            s["source"],
            s["task"],
            s["target"],
            str(s["n"]),
            f"{s['pass_rate']:.1%}",
            *(f"{s[k]:.1%}" for k in KINDS),
            f"{s['fallback_rate']:.1%}",
            f"{s['skipped_rate']:.1%}",
            "" if s["median_latency_s"] is None else f"{s['median_latency_s']:.2f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _write_examples(out: Path, rows: list[dict]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    by_kind: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        for kind in row["kinds"]:
            if len(by_kind[kind]) < 10:
                by_kind[kind].append(row)
    text = []
    for kind, items in by_kind.items():
        text.append(f"## {kind}\n")
        for r in items:
            text.append(
                f"- [{r['source']}] `{r['prompt']}`\n  - {r['text']}\n  - "
                + "; ".join(r["reasons"])
            )
        text.append("")
    (out / "failures.md").write_text("\n".join(text), encoding="utf-8")


def _row(
    source, spec, target, profile, text, assessment, *, fallback=False, skipped=False, latency=None
) -> dict:
    """One result row; a skipped prompt (passed through unchanged) has no findings."""
    kinds, reasons = ([], []) if skipped else (sorted(assessment.kinds()), assessment.reasons())
    return dict(
        source=source,
        input=spec.source,
        task=profile.task,
        target=target,
        prompt=spec.text,
        text=text,
        passed=assessment.passed and not fallback and not skipped,
        fallback=fallback,
        skipped=skipped,
        kinds=kinds,
        reasons=reasons,
        latency_s=latency,
    )


@click.command("eval")
@click.argument("prompt_file", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "-t", "--target", default="video", show_default=True, help="Target for lines that name none."
)
@click.option(
    "--reference",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Someone else's enhanced prompts for the same inputs, line-aligned.",
)
@click.option(
    "--reference-name", default="reference", show_default=True, help="Its name in the table."
)
@click.option("--no-promptx", is_flag=True, help="Assess only the reference (no model is loaded).")
@click.option(
    "--caption", help="Caption of the input image for i2v/i2i lines with neither image nor caption."
)
@click.option("--limit", type=click.IntRange(min=1), help="Use only the first N prompts.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--model", help=MODEL_HELP)
@click.option(
    "--dtype",
    default="auto",
    show_default=True,
    help="Model precision (see promptx enhance --help).",
)
@click.option(
    "--strength",
    type=click.Choice(STRENGTHS),
    help="What promptx writes (default: the Enhancer's, light with the embedded model).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary and rows as JSON.")
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    help="Write results and failure examples here.",
)
def eval_command(
    prompt_file,
    target,
    reference,
    reference_name,
    no_promptx,
    caption,
    limit,
    seed,
    model,
    dtype,
    strength,
    as_json,
    out,
):
    """Enhance PROMPT_FILE and report how faithful the results are."""
    from ..enhancer import Enhancer
    from ..prompt_files import read_prompt_file

    specs = read_prompt_file(prompt_file, limit=limit)
    refs = read_reference(reference, len(specs)) if reference else None
    if no_promptx and refs is None:
        raise click.UsageError("--no-promptx needs --reference")
    enhancer = Enhancer(
        model, quiet=as_json, dtype=None if dtype == "auto" else dtype, strength=strength
    )
    rows: list[dict] = []
    with click.progressbar(specs, label="assessing", file=sys.stderr) as bar:
        for i, spec in enumerate(bar):
            name = spec.task or target
            profile = enhancer.profile(name)
            context = spec.caption or (caption if profile.wants_image and not spec.image else None)
            if not no_promptx:
                options = dict(seed=seed, image=spec.image, caption=context)
                result = enhancer.enhance(spec.text, name, **options)
                judged = result.assessment or assess(
                    spec.text, result.text, profile, context=context
                )
                rows.append(
                    _row(
                        "promptx",
                        spec,
                        name,
                        profile,
                        result.text,
                        judged,
                        fallback=result.fallback,
                        skipped=result.skipped,
                        latency=result.stats.latency_s,
                    )
                )
            if refs is not None:
                rows.append(
                    _row(
                        reference_name,
                        spec,
                        name,
                        profile,
                        refs[i],
                        assess(spec.text, refs[i], profile, context=context),
                    )
                )
    summary = summarize(rows)
    if out:
        _write_examples(out, rows)
        (out / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    if as_json:
        click.echo(json.dumps(dict(summary=summary, rows=rows), indent=2, ensure_ascii=False))
    else:
        click.echo(_markdown(summary))
