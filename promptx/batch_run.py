"""A resumable batch run: every row of a prompt file enhanced once, written to a JSON-lines
output keyed by the row's id.

Rows come from ``promptx.prompt_files.read_batch_file`` (plain text: the id is the line number;
JSONL: the row's ``id``, else its line number). Each output line is one JSON object, ``{"id": ...,
<EnhancedPrompt fields>}``, or ``{"id": ..., "error": {"type", "message"}}`` for a row whose
input cannot be used (a line that is not a promptx row, a field a row does not have, a bad
image or target of its own): the run goes on. What would fail every row (a wrong option, a
target that does not resolve, an image given for all rows that cannot be read) fails once,
before any row. Lines are written whole and flushed to disk chunk by chunk, so a crash or
Ctrl-C loses nothing already written; rerunning with the same output skips the ids it holds
with a result and retries those with an error line (opening the output drops those lines and
a line cut off by a crash, rewriting the file atomically), so every id ends up in it once. A
failure of the model or server stops the run (rerun to resume). Not here: enhancing
(``Enhancer``), reading prompt files (``prompt_files``).
"""

from __future__ import annotations

import json
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from .errors import InvalidInputError, UnknownTargetError
from .options import EnhanceOptions
from .prompt_files import BadLine, PromptSpec, read_batch_file

DEFAULT_CHUNK = 8
#: the exit status of ``promptx enhance --file`` when some rows were written as error lines
EXIT_ROWS_FAILED = 3


@dataclass(frozen=True)
class BatchRow:
    id: str
    spec: PromptSpec | None  # None: the line cannot be used, ``problem`` says why
    problem: str | None = None


def read_rows(path: str | Path) -> list[BatchRow]:
    """The rows of a text or JSONL prompt file, with their ids (unique, or an error naming both
    lines); a line that cannot be used is a row with its ``problem`` (written as an error line)."""
    rows, seen = [], {}
    for item in read_batch_file(path):
        row_id = item.id if item.id is not None else str(item.line)
        if row_id in seen:
            raise InvalidInputError(
                f"{path}:{item.line}: id {row_id!r} is already used on line {seen[row_id]}"
            )
        seen[row_id] = item.line
        bad = isinstance(item, BadLine)
        rows.append(BatchRow(row_id, None, item.message) if bad else BatchRow(row_id, item))
    return rows


def check_run(profile_of: Callable[[str], Any], target: str, options: Mapping[str, Any]) -> None:
    """Refuse, before any row, what would fail in every row: a wrong option, a ``target`` that
    ``profile_of`` (an Enhancer's ``profile``, a registry's ``get``) does not resolve, an image
    given for all rows that cannot be read."""
    EnhanceOptions.of(options)
    profile_of(target)
    if options.get("image") is not None:
        from .images import load_image_facts

        load_image_facts(options["image"])


def pending(rows: list[BatchRow], log: "ResultLog | None") -> list[BatchRow]:
    """The rows ``log`` does not hold a result for yet (all of them without a log)."""
    return [row for row in rows if log is None or row.id not in log.done]


class ResultLog:
    """The output file: the ids it holds a result for, and appending whole lines durably.

    Opening it refuses the prompt file itself (``source``) and a path that cannot be appended
    to, then drops what a resumed run does again: a last line cut off by a crash, and error
    lines (their rows are retried), rewriting the file atomically."""

    def __init__(self, path: str | Path, *, source: str | Path | None = None) -> None:
        self.path = Path(path)
        if source is not None:
            _refuse_same_file(Path(source), self.path)
        self._check_writable()
        self.done: set[str] = self._recover()

    def _check_writable(self) -> None:
        try:
            with self.path.open("a", encoding="utf-8"):
                pass
        except OSError as exc:
            raise InvalidInputError(
                f"cannot write the output file {self.path}: {exc.strerror or exc}"
            ) from None

    def _recover(self) -> set[str]:
        """Ids of the complete result lines; the others go (see the class)."""
        try:
            data = self.path.read_bytes()
        except OSError as exc:
            raise InvalidInputError(f"cannot read the output file {self.path}: {exc}") from None
        kept, done = [], set()
        for lineno, line in enumerate(
            data.split(b"\n")[:-1], 1
        ):  # the last piece: "" or a line cut off
            parsed = _output_line(self.path, lineno, line) if line.strip() else None
            if parsed is not None and "error" not in parsed:  # a blank line or an error line goes
                kept.append(line + b"\n")
                done.add(str(parsed["id"]))
        if b"".join(kept) != data:
            self._rewrite(b"".join(kept))
        return done

    def _rewrite(self, data: bytes) -> None:
        try:
            _replace_atomically(self.path.resolve(), data)
        except OSError as exc:
            raise InvalidInputError(f"cannot rewrite the output file {self.path}: {exc}") from None

    def append(self, lines: list[str]) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write("".join(line + "\n" for line in lines))
            handle.flush()
            os.fsync(handle.fileno())


def _output_line(path: Path, lineno: int, line: bytes) -> dict:
    try:
        parsed = json.loads(line)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict) or "id" not in parsed:
        raise InvalidInputError(
            f"{path}:{lineno}: not a promptx output line (no JSON object with an "
            "'id'); give another --output"
        )
    return parsed


def _replace_atomically(target: Path, data: bytes) -> None:
    """``target`` holds ``data`` afterwards, with its permissions; a crash leaves the old file or
    the new."""
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, target.stat().st_mode & 0o7777)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _refuse_same_file(source: Path, output: Path) -> None:
    try:
        same = output.exists() and source.exists() and os.path.samefile(source, output)
    except OSError:
        same = False
    if same:
        raise InvalidInputError(
            f"the output file {output} is the prompt file {source}: write the results "
            "to another file"
        )


@dataclass
class BatchSummary:
    enhanced: int = 0
    passed_through: int = (
        0  # written as it was without asking the model (long, or a language it cannot read)
    )
    fallback: int = 0  # written, with the original prompt (no acceptable output)
    skipped: int = 0  # already in the output
    failed: int = 0  # an input error, written as an error line


class LineSink:
    """Where a run's lines go: ``log`` (their ids then count as written), ``emit``, one
    ``on_row`` call each; ``summary`` counts them."""

    def __init__(
        self,
        log: ResultLog | None,
        emit: Callable[[str], None] | None,
        on_row: Callable[[], None] | None,
        summary: BatchSummary,
    ) -> None:
        self.log, self.emit, self.on_row, self.summary = log, emit, on_row, summary

    def write(self, ids: list[str], lines: list[str], kinds: list[str]) -> None:
        """Lines in input order, with their rows' ids and ``BatchSummary`` fields."""
        if self.log is not None:
            self.log.append(lines)
            self.log.done.update(ids)
        for line, kind in zip(lines, kinds):
            setattr(self.summary, kind, getattr(self.summary, kind) + 1)
            if self.emit is not None:
                self.emit(line)
            if self.on_row is not None:
                self.on_row()


def run_batch(
    enhancer,
    rows: list[BatchRow],
    target: str,
    options: dict,
    *,
    log: ResultLog | None,
    emit: Callable[[str], None] | None = None,
    on_row: Callable[[], None] | None = None,
    chunk: int = DEFAULT_CHUNK,
) -> BatchSummary:
    """Enhance the rows not yet in ``log``, ``chunk`` at a time (decoded together where the
    backend batches), writing each chunk's lines to ``log`` and/or ``emit`` in input order.
    What would fail every row fails here, before any row (``check_run``)."""
    check_run(enhancer.profile, target, options)
    todo = pending(rows, log)
    sink = LineSink(log, emit, on_row, BatchSummary(skipped=len(rows) - len(todo)))
    with ThreadPoolExecutor(max_workers=chunk) as pool:
        for start in range(0, len(todo), chunk):
            part = todo[start : start + chunk]
            lines, kinds = zip(*pool.map(lambda row: _line(enhancer, row, target, options), part))
            sink.write([row.id for row in part], list(lines), list(kinds))
    return sink.summary


def _line(enhancer, row: BatchRow, target: str, options: dict) -> tuple[str, str]:
    """The row's output line and its summary field; an input error becomes an error line,
    other failures raise."""
    spec = row.spec
    if spec is None:
        return unusable_line(row), "failed"
    row_options = dict(options)
    if spec.image is not None:
        row_options["image"] = spec.image
    if spec.caption is not None:
        row_options["caption"] = spec.caption
    try:
        result = enhancer.enhance(spec.text, spec.task or target, **row_options)
    except (InvalidInputError, UnknownTargetError) as exc:
        return error_line(row.id, type(exc).__name__, str(exc)), "failed"
    line = json.dumps({"id": row.id, **json.loads(result.model_dump_json())}, ensure_ascii=False)
    return line, outcome_of(result.fallback, result.skipped)


def unusable_line(row: BatchRow) -> str:
    """The error line of a row whose line in the file cannot be used."""
    return error_line(row.id, InvalidInputError.__name__, row.problem or "")


def error_line(row_id: str, kind: str, message: str) -> str:
    return json.dumps(
        {"id": row_id, "error": {"type": kind, "message": message}}, ensure_ascii=False
    )


def outcome_of(fallback: bool, skipped: bool) -> str:
    """The ``BatchSummary`` field a written result counts in."""
    return "fallback" if fallback else "passed_through" if skipped else "enhanced"


def describe(summary: BatchSummary, output: Path | None) -> str:
    where = f" -> {output}" if output else ""
    return (
        f"{summary.enhanced} enhanced, {summary.passed_through} passed through as they were, "
        f"{summary.fallback} returned unchanged, {summary.skipped} already done, "
        f"{summary.failed} with input errors{where}"
    )
