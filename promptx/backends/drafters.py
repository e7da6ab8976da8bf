"""Finding and attaching a drafter for speculative decoding.

Drafters shipped with promptx live in ``promptx/drafters/<name>/`` (EAGLE-3
layout: config.json + model.safetensors). A shipped drafter is used only if
it was trained for the loaded target (its fingerprint matches).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ModelError

SHIPPED_DIR = Path(__file__).resolve().parent.parent / "drafters"


def find_drafter(target) -> Path | None:
    """The shipped drafter trained for ``target``, or None."""
    if not SHIPPED_DIR.is_dir():
        return None
    from engine import read_fingerprint, target_fingerprint

    wanted = target_fingerprint(target)
    for candidate in sorted(SHIPPED_DIR.iterdir()):
        if (candidate / "config.json").is_file() and read_fingerprint(candidate) == wanted:
            return candidate
    return None


PLANNERS = ("harness", "tree")


def load_drafter_for(target, path: Path):
    """Load the drafter at ``path`` for ``target`` and its default fixed-tree planner."""
    from engine import DrafterLoadError, DrafterMismatchError, load_drafter
    from engine import FixedTree

    try:
        drafter = load_drafter(path, target, dtype=target.dtype)
    except (DrafterLoadError, DrafterMismatchError) as exc:
        raise ModelError(f"drafter {path}: {exc}") from exc
    return drafter, FixedTree()


def make_planner(kind: str, target, drafter, fixed, quiet: bool = True, copy_table=None):
    """The tree planner for speculative decoding: the cost-aware harness (its cost table from the
    cache, measured quickly once when missing, at its first decode) or the drafter's fixed tree.
    The harness also prices copy drafts (``engine.speculative.copy_draft``) from ``copy_table``
    (an ``NgramTable``, ``load_copy_table``) where one is given."""
    if kind not in PLANNERS:
        raise ModelError(f"unknown tree planner {kind!r}: use one of {', '.join(PLANNERS)}")
    if kind == "tree":
        return fixed
    from engine import Harness

    def announce() -> None:
        if not quiet:
            import sys

            print(
                "promptx: measuring this machine's decoding costs once "
                "(promptx calibrate does a full calibration)...",
                file=sys.stderr,
            )

    harness = Harness.for_model(target, drafter, on_measure=announce)
    if copy_table is not None:
        from engine import CopyDrafter

        harness.copies = CopyDrafter(copy_table)
    return harness


def load_copy_table(target, drafter_dir: Path):
    """The copy-draft table (``engine.speculative.copy_draft.NgramTable``) beside the drafter at
    ``drafter_dir`` when it was made for ``target`` and copy drafts are not turned off
    ($PROMPTX_COPY_DRAFTS=0), else None. A damaged table is an error: it ships with the drafter."""
    import os

    from engine import target_fingerprint
    from engine import COPY_TABLE, CopyTableError, CopyTableMismatch, NgramTable

    path = drafter_dir / COPY_TABLE
    if os.environ.get("PROMPTX_COPY_DRAFTS", "1") == "0" or not path.is_file():
        return None
    try:
        return NgramTable.load(path, expect_fingerprint=target_fingerprint(target))
    except CopyTableMismatch:
        return None
    except CopyTableError as exc:
        raise ModelError(str(exc)) from exc
