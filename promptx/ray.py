"""Enhance a Ray dataset across a Ray cluster: one Enhancer per actor, rows in batches.

``enhance_dataset(ds, target, ...)`` maps a ``ray.data.Dataset`` with a ``prompt`` column
through a pool of actors, each of which loads the model once and decodes its batch of rows
together (``batch_run.run_batch``, the same code as ``promptx enhance --file``). Each row
comes back with its columns and ``enhanced`` (the text, None for an input error),
``negative_prompt``, ``fallback``, ``error`` and ``promptx`` (the whole output line as JSON:
``{"id", <EnhancedPrompt fields>}`` or ``{"id", "error"}``). ``enhance_file_on_ray`` is the
command line's ``--ray``: the rows of a prompt file not yet in the output, their lines
appended as they return, so a crash or Ctrl-C loses nothing written and a rerun resumes; rows
whose line cannot be used are written as error lines by the driver, never sent to a worker.

Ray is an extra (``pip install -e '.[ray]'`` in promptx's checkout), imported only when called.
Not here: what one row becomes (``batch_run``), the model (``Enhancer``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from .batch_run import (
    BatchRow,
    BatchSummary,
    LineSink,
    ResultLog,
    check_run,
    outcome_of,
    pending,
    run_batch,
    unusable_line,
)
from .errors import InvalidInputError
from .prompt_files import PromptSpec

__all__ = [
    "EnhanceWorker",
    "enhance_dataset",
    "enhance_file_on_ray",
    "require_ray",
    "start_quietly_at_full_priority",
]

#: columns a row may carry besides ``prompt`` (the JSONL fields of ``promptx enhance --file``)
ROW_COLUMNS = ("id", "target", "image", "caption")
OUTPUT_COLUMNS = ("enhanced", "negative_prompt", "fallback", "error", "promptx")


def require_ray():
    """The ``ray`` module with Ray Data, or InvalidInputError naming the extra to install."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise InvalidInputError(
            "Ray is not installed: pip install -e '.[ray]' in promptx's checkout"
        ) from None
    return ray


class EnhanceWorker:
    """A Ray Data actor: builds one Enhancer, then enhances each batch of rows given to it."""

    def __init__(
        self,
        target: str,
        options: Mapping[str, Any],
        enhancer_options: Mapping[str, Any],
        prompt_column: str = "prompt",
    ) -> None:
        from .enhancer import Enhancer

        self.target, self.options, self.prompt_column = target, dict(options), prompt_column
        self.enhancer = Enhancer(**enhancer_options)

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        columns = {name: list(values) for name, values in batch.items()}
        n = len(columns[self.prompt_column])
        rows = [_row(columns, i, self.prompt_column) for i in range(n)]
        lines: list[str] = []
        run_batch(
            self.enhancer,
            rows,
            self.target,
            self.options,
            log=None,
            emit=lines.append,
            chunk=max(1, n),
        )
        out = {name: _array(values) for name, values in columns.items()}
        out.update({name: _array(values) for name, values in _output_columns(lines).items()})
        return out


def _row(columns: dict[str, list], i: int, prompt_column: str) -> BatchRow:
    """Row ``i`` of a batch as the batch runner's row (its id: the ``id`` column, else its
    position)."""

    def value(name: str):
        cell = columns[name][i] if name in columns else None
        missing = cell is None or (
            not isinstance(cell, str) and cell != cell
        )  # Arrow writes None as NaN
        return None if missing else cell

    row_id = value("id")
    image = value("image")
    spec = PromptSpec(
        text=str(value(prompt_column) or ""),
        source=f"row {i}",
        task=value("target"),
        image=Path(image) if image else None,
        caption=value("caption"),
        id=None if row_id is None else str(row_id),
        line=i + 1,
    )
    return BatchRow(str(row_id) if row_id is not None else str(i + 1), spec)


def _output_columns(lines: list[str]) -> dict[str, list]:
    parsed = [json.loads(line) for line in lines]
    return {
        "enhanced": [p.get("text") for p in parsed],
        "negative_prompt": [p.get("negative_prompt") for p in parsed],
        "fallback": [bool(p.get("fallback", False)) for p in parsed],
        "error": [p["error"]["message"] if "error" in p else None for p in parsed],
        "promptx": lines,
    }


def _array(values: list):
    import numpy as np

    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def enhance_dataset(
    ds,
    target: str = "video",
    *,
    workers: int = 1,
    cpus_per_worker: float | None = None,
    gpus_per_worker: float = 0,
    batch_size: int = 8,
    prompt_column: str = "prompt",
    enhancer_options: Mapping[str, Any] | None = None,
    **options,
):
    """``ds`` (a ``ray.data.Dataset`` with a ``prompt_column``; optional ``id``, ``target``,
    ``image`` (a path every worker can read) and ``caption`` columns) with the enhancement
    columns added (``OUTPUT_COLUMNS``). Lazy like every Ray dataset: it runs when consumed.

    ``workers`` actors, each with ``cpus_per_worker`` CPUs (default: the cluster's CPUs
    shared out) and ``gpus_per_worker`` GPUs, build ``Enhancer(**enhancer_options)`` once
    (``model``, ``dtype``, ``drafter``, ``retries``, ...; the embedded model by default) and
    decode ``batch_size`` rows together. ``options`` are ``promptx.options.EnhanceOptions``'s
    (seed, temperature, style, ...)."""
    ray = require_ray()
    enhancer_options = {"quiet": True, **dict(enhancer_options or {})}
    check_target(target, options, enhancer_options)
    if workers < 1 or batch_size < 1:
        raise InvalidInputError("workers and batch_size must be >= 1")
    if prompt_column not in ds.columns():
        raise InvalidInputError(
            f"the dataset has no {prompt_column!r} column (columns: {ds.columns()})"
        )
    total = (
        ray.cluster_resources().get("CPU") if ray.is_initialized() else None
    )  # else Ray starts locally
    cpus = cpus_per_worker or max(1, int(total or os.cpu_count() or 1) // workers)
    return ds.map_batches(
        EnhanceWorker,
        fn_constructor_kwargs=dict(
            target=target,
            options=options,
            enhancer_options=enhancer_options,
            prompt_column=prompt_column,
        ),
        batch_size=batch_size,
        compute=ray.data.ActorPoolStrategy(size=workers),
        num_cpus=cpus,
        num_gpus=gpus_per_worker,
        batch_format="numpy",
        runtime_env={"env_vars": {"OMP_NUM_THREADS": str(max(1, int(cpus)))}},
    )


def check_target(
    target: str, options: Mapping[str, Any], enhancer_options: Mapping[str, Any] | None
) -> None:
    """``batch_run.check_run`` against the templates the workers will have: what would fail in
    every row fails here, once."""
    from .profiles.registry import registry_for

    check_run(registry_for((enhancer_options or {}).get("templates_dir")).get, target, options)


def start_quietly_at_full_priority() -> None:
    """Settings for a Ray that promptx starts itself: its workers at normal priority (Ray runs
    them niced, so beside any other job they starve), no core-worker notes beside the bar."""
    os.environ.setdefault("RAY_worker_niceness", "0")
    os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")


def _quiet_ray_data(ray) -> None:
    """The command line shows its own progress bar: no Ray Data bars or notes beside it."""
    import logging

    logging.getLogger("ray.data").setLevel(logging.ERROR)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False


def enhance_file_on_ray(
    rows: Iterable[BatchRow],
    log: ResultLog | None,
    target: str,
    options: Mapping[str, Any],
    *,
    address: str | None = None,
    workers: int = 1,
    batch_size: int = 8,
    enhancer_options: Mapping[str, Any] | None = None,
    emit: Callable[[str], None] | None = None,
    on_row: Callable[[], None] | None = None,
) -> BatchSummary:
    """The rows not yet in ``log`` enhanced on Ray (a cluster at ``address``, else a local one),
    each returned batch appended to ``log`` (and/or passed to ``emit``) as it arrives."""
    ray = require_ray()
    rows = list(rows)
    check_target(target, options, enhancer_options)
    todo = pending(rows, log)
    sink = LineSink(log, emit, on_row, BatchSummary(skipped=len(rows) - len(todo)))
    unusable = [row for row in todo if row.spec is None]
    if unusable:
        sink.write(
            [row.id for row in unusable],
            [unusable_line(row) for row in unusable],
            ["failed"] * len(unusable),
        )
    todo = [row for row in todo if row.spec is not None]
    if not todo:
        return sink.summary
    if not ray.is_initialized():
        start_quietly_at_full_priority()
        ray.init(
            address=address,
            include_dashboard=False,
            log_to_driver=False,
            logging_level="ERROR",
            configure_logging=True,
        )
    _quiet_ray_data(ray)
    items = [
        {
            "id": row.id,
            "prompt": row.spec.text,
            "target": row.spec.task,
            "image": str(row.spec.image) if row.spec.image else None,
            "caption": row.spec.caption,
        }
        for row in todo
    ]
    ds = ray.data.from_items(items, override_num_blocks=max(1, min(len(items), workers * 4)))
    options = {k: v for k, v in options.items() if v is not None}
    mapped = enhance_dataset(
        ds,
        target,
        workers=workers,
        batch_size=batch_size,
        enhancer_options=enhancer_options,
        **options,
    )
    for batch in mapped.iter_batches(batch_size=None, batch_format="numpy"):
        lines = [str(line) for line in batch["promptx"]]
        sink.write(
            [str(i) for i in batch["id"]], lines, [_kind(json.loads(line)) for line in lines]
        )
    return sink.summary


def _kind(parsed: dict) -> str:
    """The ``BatchSummary`` field of an output line."""
    return (
        "failed" if "error" in parsed else outcome_of(parsed.get("fallback"), parsed.get("skipped"))
    )
