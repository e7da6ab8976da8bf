"""Finding a model snapshot in the local Hugging Face hub cache, by repo id (``ORG/NAME[@REV]``).

The cache is laid out as huggingface_hub writes it:
``<cache>/models--ORG--NAME/{refs/<REV>, snapshots/<commit>/, blobs/}``.
The cache is only read; huggingface_hub is not imported.

Not here: downloading anything (promptx never does), loading weights (engine) or
other model sources such as GGUF files and the embedded default (models).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .errors import ModelNotFoundError

_PART = r"[A-Za-z0-9_.-]+"
_REPO_ID = re.compile(rf"({_PART})/({_PART})(?:@({_PART}))?")
_COMMIT_PREFIX = re.compile(r"[0-9a-fA-F]{7,40}")


def hub_cache_dir() -> Path:
    """The hub cache: $HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub,
    else ~/.cache/huggingface/hub."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "huggingface" / "hub"


def split_repo_id(spec: str) -> tuple[str, str, str | None] | None:
    """``ORG/NAME[@REV]`` as (org, name, revision or None); None when ``spec`` is not of that
    form."""
    match = _REPO_ID.fullmatch(spec)
    if match is None or any(part and not part.strip(".") for part in match.groups()):
        return None  # "." and ".." are paths, not names
    return match.group(1), match.group(2), match.group(3)


def looks_like_repo_id(spec: str) -> bool:
    """True for ``ORG/NAME`` or ``ORG/NAME@REV`` that is not an existing local path."""
    return split_repo_id(spec) is not None and not Path(spec).expanduser().exists()


def _repo_dir(org: str, name: str) -> Path:
    repo = hub_cache_dir() / f"models--{org}--{name}"
    if not repo.is_dir():
        raise ModelNotFoundError(
            f"{org}/{name} is not in the local Hugging Face cache ({hub_cache_dir()}); "
            f"promptx never downloads: fetch it with `huggingface-cli download {org}/{name}` "
            "or set HF_HUB_CACHE to a cache that holds it"
        )
    return repo


def _ref_names(repo: Path) -> list[str]:
    refs = repo / "refs"
    return (
        sorted(str(p.relative_to(refs)) for p in refs.rglob("*") if p.is_file())
        if refs.is_dir()
        else []
    )


def _commit_of(repo: Path, revision: str) -> str:
    """The snapshot folder name for ``revision``: a ref's commit, or a commit (prefix) itself."""
    ref = repo / "refs" / revision
    if ref.is_file():
        return ref.read_text(encoding="utf-8").strip()
    if _COMMIT_PREFIX.fullmatch(revision):
        snapshots = repo / "snapshots"
        found = (
            sorted(p.name for p in snapshots.iterdir() if p.name.startswith(revision.lower()))
            if snapshots.is_dir()
            else []
        )
        if len(found) == 1:
            return found[0]
        if found:
            raise ModelNotFoundError(
                f"revision {revision!r} of {repo} is ambiguous: matches {', '.join(found)}"
            )
    refs = ", ".join(_ref_names(repo)) or "none"
    raise ModelNotFoundError(
        f"revision {revision!r} not found in {repo} (no such ref or snapshot; refs: {refs})"
    )


def find_snapshot(repo_id: str) -> Path:
    """The cached snapshot directory of ``ORG/NAME[@REV]`` (REV defaults to main; a ref or a commit
    prefix of 7+ hex digits); raises ModelNotFoundError when it is absent or has no config.json."""
    parts = split_repo_id(repo_id)
    if parts is None:
        raise ModelNotFoundError(f"{repo_id!r} is not a Hugging Face repo id (ORG/NAME[@REVISION])")
    org, name, revision = parts
    repo = _repo_dir(org, name)
    snapshot = repo / "snapshots" / _commit_of(repo, revision or "main")
    if not (snapshot / "config.json").is_file():
        raise ModelNotFoundError(
            f"{snapshot}: no config.json, so not a transformers model directory (or an incomplete "
            f"download; fetch it again with `huggingface-cli download {org}/{name}`)"
        )
    return snapshot
