"""Reading benchmark prompt files: plain text, promptx JSONL and Spec-Bench ``question.jsonl``.

Three formats, told apart by ``detect_format`` (or chosen explicitly):

- ``text``: one prompt per line; blank lines are skipped. The target comes
  from the caller (``promptx bench --target``).
- ``jsonl``: one JSON object per line with ``prompt`` (string), optional
  ``task`` or ``target`` (a target profile name or alias such as ``video``,
  ``t2v``, ``i2v``), optional ``image`` (a path, relative to the file's
  folder), optional ``caption`` (what the input image shows, in words) and
  optional ``id`` (a string or integer naming the row in batch outputs).
- ``specbench``: Spec-Bench's ``question.jsonl``, objects with ``turns`` (a
  non-empty list of strings) and ``category``; only the first turn is used,
  sent as raw chat without an enhancement template.

A UTF-8 byte order mark at the start of a file is dropped. This module only
parses: it does not resolve targets, load images or tokenize
(``promptx.cli.bench`` does). Malformed input raises ``InvalidInputError``
naming the file and line; ``read_batch_file`` (``promptx enhance --file``)
instead returns a ``BadLine`` for each line that cannot be used, and also
refuses fields a JSONL row does not have (``ROW_FIELDS``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .errors import InvalidInputError

FORMATS = ("text", "jsonl", "specbench")
JSON_SUFFIXES = (".jsonl", ".json", ".ndjson")

#: the fields of a promptx JSONL row in a batch file (``read_batch_file`` refuses any other)
ROW_FIELDS = ("prompt", "task", "target", "image", "caption", "id")

__all__ = [
    "FORMATS",
    "ROW_FIELDS",
    "BadLine",
    "PromptSpec",
    "detect_format",
    "read_batch_file",
    "read_prompt_file",
]


@dataclass(frozen=True)
class PromptSpec:
    """One benchmark prompt as written in the file, before rendering."""

    text: str
    source: str  # "file:line", for messages and the report
    task: str | None = None  # target profile or alias (jsonl); None = the caller's default
    image: Path | None = None  # input image (jsonl, i2v/i2i targets)
    caption: str | None = None  # what the input image shows (jsonl, i2v/i2i targets)
    category: str | None = None  # Spec-Bench category
    raw_chat: bool = False  # True: send ``text`` as the user turn, no template
    id: str | None = None  # the row's own id (jsonl); None = its line number
    line: int = 0  # 1-based line number in the file


@dataclass(frozen=True)
class BadLine:
    """A line of a batch file that cannot be used, and why."""

    line: int  # 1-based line number in the file
    id: str | None  # the line's own id where it could be read; None = its line number
    message: str  # "file:line: what is wrong"


def _lines(path: Path) -> list[tuple[int, str]]:
    """(1-based line number, stripped text) for every non-blank line. Lines end at a newline only
    (not at U+2028 and the like, which a JSON string holds as they are)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"cannot read prompt file {path}: {exc}") from None
    lines = [(n, line.strip()) for n, line in enumerate(text.split("\n"), start=1) if line.strip()]
    if not lines:
        raise InvalidInputError(f"{path}: the prompt file holds no prompts")
    return lines


def _json_object(path: Path, lineno: int, line: str) -> dict:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        raise InvalidInputError(
            f"{path}:{lineno}: expected a JSON object, got {type(value).__name__}"
        )
    return value


def detect_format(path: str | Path) -> str:
    """``text`` unless the name ends in .jsonl/.json/.ndjson; then ``specbench`` when the
    first object has ``turns``, else ``jsonl``."""
    path = Path(path)
    return _detected(path, _lines(path) if _is_json(path) else [])


def _is_json(path: Path) -> bool:
    return path.suffix.lower() in JSON_SUFFIXES


def _detected(path: Path, lines: list[tuple[int, str]], *, tolerant: bool = False) -> str:
    """``detect_format`` of a file whose lines are read; ``tolerant``: a first line that is not a
    JSON object makes a JSON file ``jsonl`` (instead of an error)."""
    if not _is_json(path):
        return "text"
    try:
        return "specbench" if "turns" in _json_object(path, *lines[0]) else "jsonl"
    except InvalidInputError:
        if not tolerant:
            raise
        return "jsonl"


def _optional_str(path: Path, lineno: int, obj: dict, key: str) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{path}:{lineno}: {key!r} must be a non-empty string")
    return value.strip()


def _text_prompt(path: Path, lineno: int, line: str) -> PromptSpec:
    return PromptSpec(text=line, source=f"{path}:{lineno}", line=lineno)


def _jsonl_prompt(path: Path, lineno: int, line: str) -> PromptSpec:
    return _prompt_of(path, lineno, _json_object(path, lineno, line))


def _batch_row(path: Path, lineno: int, line: str) -> PromptSpec:
    """A JSONL line of a batch file: a promptx row with no field but ``ROW_FIELDS``."""
    obj = _json_object(path, lineno, line)
    unknown = sorted(set(obj) - set(ROW_FIELDS))
    if unknown:
        raise InvalidInputError(
            f"{path}:{lineno}: unknown field{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown))}; a row has: {', '.join(ROW_FIELDS)}"
        )
    return _prompt_of(path, lineno, obj)


def _prompt_of(path: Path, lineno: int, obj: dict) -> PromptSpec:
    if "turns" in obj:
        raise InvalidInputError(
            f"{path}:{lineno}: a Spec-Bench line ('turns') in a promptx JSONL file"
        )
    prompt = obj.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise InvalidInputError(f"{path}:{lineno}: needs a non-empty string field 'prompt'")
    image = _optional_str(path, lineno, obj, "image")
    image_path = None if image is None else (path.parent / image).expanduser()
    if "task" in obj and "target" in obj:
        raise InvalidInputError(f"{path}:{lineno}: give 'task' or 'target', not both")
    return PromptSpec(
        text=prompt.strip(),
        source=f"{path}:{lineno}",
        task=_optional_str(path, lineno, obj, "task" if "task" in obj else "target"),
        image=image_path,
        caption=_optional_str(path, lineno, obj, "caption"),
        id=_row_id(path, lineno, obj),
        line=lineno,
    )


def _row_id(path: Path, lineno: int, obj: dict) -> str | None:
    value = obj.get("id")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
        raise InvalidInputError(f"{path}:{lineno}: 'id' must be a non-empty string or an integer")
    return str(value).strip()


def _specbench_prompt(path: Path, lineno: int, line: str) -> PromptSpec:
    obj = _json_object(path, lineno, line)
    turns = obj.get("turns")
    if not isinstance(turns, list) or not turns:
        raise InvalidInputError(f"{path}:{lineno}: needs a non-empty list field 'turns'")
    first = turns[0]
    if not isinstance(first, str) or not first.strip():
        raise InvalidInputError(f"{path}:{lineno}: the first turn must be a non-empty string")
    category = _optional_str(path, lineno, obj, "category") or "uncategorized"
    return PromptSpec(
        text=first.strip(), source=f"{path}:{lineno}", category=category, raw_chat=True, line=lineno
    )


_PARSERS = {"text": _text_prompt, "jsonl": _jsonl_prompt, "specbench": _specbench_prompt}


def read_prompt_file(
    path: str | Path, fmt: str = "auto", *, limit: int | None = None
) -> list[PromptSpec]:
    """Parse ``path`` as ``fmt`` (``auto``, ``text``, ``jsonl`` or ``specbench``).

    ``limit`` keeps the first prompts only; lines after them are not parsed.
    """
    path = Path(path)
    if fmt != "auto" and fmt not in _PARSERS:
        raise InvalidInputError(
            f"unknown prompt file format {fmt!r}; use auto, {', '.join(FORMATS)}"
        )
    if limit is not None and limit < 1:
        raise InvalidInputError(f"the number of prompts must be >= 1, not {limit}")
    lines = _lines(path)
    if fmt == "auto":
        fmt = _detected(path, lines)
    return [_PARSERS[fmt](path, lineno, line) for lineno, line in lines[:limit]]


def read_batch_file(path: str | Path) -> list[PromptSpec | BadLine]:
    """The rows of a batch file (``text`` or promptx ``jsonl``, told apart as ``detect_format``
    does), each a ``PromptSpec`` or, where the line cannot be used, a ``BadLine``. What makes
    the whole file unusable (unreadable, empty, a Spec-Bench file) raises ``InvalidInputError``."""
    path = Path(path)
    lines = _lines(path)
    fmt = _detected(path, lines, tolerant=True)
    if fmt == "specbench":
        raise InvalidInputError(
            f"{path}: a Spec-Bench file holds questions, not prompts to enhance"
        )
    parse = _batch_row if fmt == "jsonl" else _text_prompt
    return [_usable(parse, path, lineno, line) for lineno, line in lines]


def _usable(parse, path: Path, lineno: int, line: str) -> PromptSpec | BadLine:
    try:
        return parse(path, lineno, line)
    except InvalidInputError as exc:
        return BadLine(line=lineno, id=_readable_id(path, lineno, line), message=str(exc))


def _readable_id(path: Path, lineno: int, line: str) -> str | None:
    """The ``id`` of a line that is a JSON object with a usable id, else None."""
    try:
        obj = json.loads(line)
        return _row_id(path, lineno, obj) if isinstance(obj, dict) else None
    except (json.JSONDecodeError, InvalidInputError):
        return None
