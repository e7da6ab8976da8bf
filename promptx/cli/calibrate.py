"""``promptx calibrate``: measure the speculative harness's cost table on this machine.

The table (target verification latency by tree tokens x context x batch, and
drafter step latency by frontier width) is stored in the cache directory,
keyed by device, model + drafter shape, dtype and thread count, and loaded
automatically by the harness. Without it the harness measures a quick table
on first use. Not here: the measuring itself (``engine.planning.calibrate``).
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..errors import InvalidInputError
from .common import MODEL_HELP


def parse_grid(name: str, value: str | None, default: tuple[int, ...]) -> tuple[int, ...]:
    if value is None:
        return default
    try:
        grid = tuple(sorted({int(part) for part in value.split(",") if part.strip()}))
    except ValueError:
        raise InvalidInputError(
            f"--{name} {value!r}: give comma-separated integers such as 1,4,16"
        ) from None
    if not grid or grid[0] < 1:
        raise InvalidInputError(f"--{name} {value!r}: every value must be >= 1")
    return grid


def summary_lines(table) -> list[str]:
    """A short human summary: verification latency at batch 1 by tokens for each context."""
    lines = [f"device {table.key.device}, dtype {table.key.dtype}, {table.key.threads} thread(s)"]
    head = "context | " + " | ".join(f"{n} tok" for n in table.tokens)
    lines += [head, "-" * len(head)]
    for c, row in zip(table.contexts, table.verify[0]):
        lines.append(f"{c:>7} | " + " | ".join(f"{s * 1000:.1f} ms" for s in row))
    lines.append(
        "drafter step: "
        + ", ".join(f"width {w}: {s * 1000:.1f} ms" for w, s in zip(table.widths, table.draft[0]))
    )
    return lines


@click.command("calibrate")
@click.option("--model", help=MODEL_HELP)
@click.option(
    "--drafter",
    type=click.Path(path_type=Path, file_okay=False),
    help="Drafter checkpoint (default: the shipped one, else a random one of the default shape).",
)
@click.option(
    "--quick", is_flag=True, help="The small grid the harness measures by itself (seconds)."
)
@click.option("--tokens", help="Tree tokens per verification pass (default 1,2,4,8,16,32,64).")
@click.option("--contexts", help="Context lengths (default 128,512,1024,2048,4096).")
@click.option("--batches", help="Concurrent sequences (default 1,2,4,8).")
@click.option("--widths", help="Drafter frontier widths (default 1,2,4,8,16,32,64).")
@click.option(
    "--repeats",
    type=click.IntRange(1, 50),
    help="Timed repeats per point; the median is kept (default 3).",
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
    "--threads", type=click.IntRange(min=1), help="torch threads (default: torch's own choice)."
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the table here instead of the cache directory.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the table as JSON.")
def calibrate(
    model,
    drafter,
    quick,
    tokens,
    contexts,
    batches,
    widths,
    repeats,
    dtype,
    device,
    threads,
    out,
    as_json,
) -> None:
    """Measure verification and drafting latencies for the cost-aware harness."""
    from engine import FULL_GRID, QUICK_GRID

    grid = QUICK_GRID if quick else FULL_GRID
    options = dict(
        tokens=parse_grid("tokens", tokens, grid["tokens"]),
        contexts=parse_grid("contexts", contexts, grid["contexts"]),
        batches=parse_grid("batches", batches, grid["batches"]),
        widths=parse_grid("widths", widths, grid["widths"]),
        repeats=repeats or grid["repeats"],
    )
    if threads is not None:
        import torch

        torch.set_num_threads(threads)
    from engine import calibrate as measure
    from engine import table_path

    from .bench import choose_drafter
    from .common import load_generator

    _, _, generator = load_generator(model, dtype, device)
    draft, info = choose_drafter(generator, drafter, seed=0)
    table = measure(generator.model, draft, quick=quick, progress=not as_json, **options)
    table.meta["drafter"] = info["path"] or "random (default shape)"
    path = table.save(out or table_path(table.key))
    if as_json:
        click.echo(json.dumps({"path": str(path), **table.to_json()}, indent=1))
        return
    for line in summary_lines(table):
        click.echo(line)
    click.echo(f"saved {path} ({table.meta['seconds']} s of measuring)")
