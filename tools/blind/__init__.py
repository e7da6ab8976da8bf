"""Blind reading: measure enhancement quality the way people see it.

Independent readers see only a short prompt and an enhanced text, shuffled together with
reference enhancements, and label each with the blind guide (../shared/blind-guide.md).
``python -m tools.blind draw | enhance | batches | score`` runs one reading; see
data/eval/blind/README.md.

This module holds what every step shares: where the repository and the shared data are, the
task names, and ``BlindError``, the one error a user sees (printed as one line, exit status 2).
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA = ROOT.parent / "shared" / "data"
DEFAULT_REGISTRY = ROOT / "data" / "eval" / "blind" / "used.jsonl"
GUIDE = ROOT.parent / "shared" / "blind-guide.md"

TASKS = ("t2v", "t2i", "i2v", "i2i")
IMAGE_TASKS = ("i2v", "i2i")
GENERATORS = {
    "t2v": "text-to-video",
    "t2i": "text-to-image",
    "i2v": "image-to-video",
    "i2i": "image-to-image",
}
DEFAULT_TARGETS = {"t2v": "video", "t2i": "image", "i2v": "image-to-video", "i2i": "image-to-image"}


class BlindError(Exception):
    """A user error: bad arguments, files or data. Its message is printed as
    ``blind: <message>``."""
