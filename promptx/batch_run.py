"""A resumable batch run: every row of a prompt file enhanced once, written to a JSON-lines
output keyed by the row's id.

Rows come from ``promptx.prompt_files`` (plain text: the id is the line number; JSONL: the
row's ``id``, else its line number). Each output line is one JSON object, ``{"id": ...,
<EnhancedPrompt fields>}``, or ``{"id": ..., "error": {"type", "message"}}`` for a row whose
input cannot be used (the run goes on). Lines are written whole and flushed to disk chunk by
chunk, so a crash or Ctrl-C loses nothing already written; rerunning with the same output
skips the ids it holds (a line cut off by a crash is dropped and its row done again), so no
row is lost or written twice. A failure of the model or server stops the run (rerun to
resume). Not here: enhancing (``Enhancer``), reading prompt files (``prompt_files``).
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .errors import InvalidInputError, UnknownTargetError
from .options import EnhanceOptions
from .prompt_files import PromptSpec, read_prompt_file

DEFAULT_CHUNK = 8


@dataclass(frozen=True)
class BatchRow:
    id: str
    spec: PromptSpec


def read_rows(path: str | Path) -> list[BatchRow]:
    """The rows of a text or JSONL prompt file, with their ids (unique, or an error naming both lines)."""
    specs = read_prompt_file(path)
    if any(spec.raw_chat for spec in specs):
        raise InvalidInputError(f"{path}: a Spec-Bench file holds questions, not prompts to enhance")
    rows, seen = [], {}
    for spec in specs:
        row_id = spec.id if spec.id is not None else str(spec.line)
        if row_id in seen:
            raise InvalidInputError(f"{path}:{spec.line}: id {row_id!r} is already used on line {seen[row_id]}")
        seen[row_id] = spec.line
        rows.append(BatchRow(row_id, spec))
    return rows


class ResultLog:
    """The output file: the ids it already holds, and appending whole lines durably."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.done: set[str] = self._recover()

    def _recover(self) -> set[str]:
        """Ids of the complete lines; a last line without its newline (cut off) is removed."""
        if not self.path.exists():
            return set()
        try:
            data = self.path.read_bytes()
        except OSError as exc:
            raise InvalidInputError(f"cannot read the output file {self.path}: {exc}") from None
        complete = data[: data.rfind(b"\n") + 1]
        if len(complete) != len(data):
            with self.path.open("r+b") as handle:
                handle.truncate(len(complete))
        done = set()
        for lineno, line in enumerate(complete.decode("utf-8", errors="replace").splitlines(), 1):
            if not line.strip():
                continue
            try:
                done.add(str(json.loads(line)["id"]))
            except (json.JSONDecodeError, KeyError, TypeError):
                raise InvalidInputError(f"{self.path}:{lineno}: not a promptx output line (no JSON object with an "
                                        "'id'); give another --output") from None
        return done

    def append(self, lines: list[str]) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write("".join(line + "\n" for line in lines))
            handle.flush()
            os.fsync(handle.fileno())


@dataclass
class BatchSummary:
    enhanced: int = 0
    passed_through: int = 0   # written as it was without asking the model (long, or a language it cannot read)
    fallback: int = 0         # written, with the original prompt (no acceptable output)
    skipped: int = 0          # already in the output
    failed: int = 0           # an input error, written as an error line


def run_batch(enhancer, rows: list[BatchRow], target: str, options: dict, *, log: ResultLog | None,
              emit: Callable[[str], None] | None = None, on_row: Callable[[], None] | None = None,
              chunk: int = DEFAULT_CHUNK) -> BatchSummary:
    """Enhance the rows not yet in ``log``, ``chunk`` at a time (decoded together where the
    backend batches), writing each chunk's lines to ``log`` and/or ``emit`` in input order.
    A wrong option fails here, before any row (not as an error line in every row)."""
    EnhanceOptions.of(options)
    summary = BatchSummary()
    todo = [row for row in rows if log is None or row.id not in log.done]
    summary.skipped = len(rows) - len(todo)
    with ThreadPoolExecutor(max_workers=chunk) as pool:
        for start in range(0, len(todo), chunk):
            part = todo[start: start + chunk]
            outcomes = list(pool.map(lambda row: _line(enhancer, row, target, options), part))
            lines = [line for line, _ in outcomes]
            for _, kind in outcomes:
                setattr(summary, kind, getattr(summary, kind) + 1)
            if log is not None:
                log.append(lines)
                log.done.update(row.id for row in part)
            for line in lines:
                if emit is not None:
                    emit(line)
                if on_row is not None:
                    on_row()
    return summary


def _line(enhancer, row: BatchRow, target: str, options: dict) -> tuple[str, str]:
    """The row's output line and its summary field; an input error becomes an error line,
    other failures raise."""
    spec = row.spec
    row_options = dict(options)
    if spec.image is not None:
        row_options["image"] = spec.image
    if spec.caption is not None:
        row_options["caption"] = spec.caption
    try:
        result = enhancer.enhance(spec.text, spec.task or target, **row_options)
    except (InvalidInputError, UnknownTargetError) as exc:
        error = {"type": type(exc).__name__, "message": str(exc)}
        return json.dumps({"id": row.id, "error": error}, ensure_ascii=False), "failed"
    line = json.dumps({"id": row.id, **json.loads(result.model_dump_json())}, ensure_ascii=False)
    return line, outcome_of(result.fallback, result.skipped)


def outcome_of(fallback: bool, skipped: bool) -> str:
    """The ``BatchSummary`` field a written result counts in."""
    return "fallback" if fallback else "passed_through" if skipped else "enhanced"


def describe(summary: BatchSummary, output: Path | None) -> str:
    where = f" -> {output}" if output else ""
    return (f"{summary.enhanced} enhanced, {summary.passed_through} passed through as they were, "
            f"{summary.fallback} returned unchanged, {summary.skipped} already done, "
            f"{summary.failed} with input errors{where}")

