"""Training checkpoints shared by the drafter and LoRA loops: write, find, fingerprint the data.

A checkpoint is ``out/checkpoints/step-NNNNNNN/`` holding the weights (written
by the caller) and ``state.pt`` (step, epoch, data position, data fingerprint,
optimizer, scheduler, RNG), written last, so a folder without it is
incomplete and ignored. Only the newest ``keep`` complete ones are kept.

Not here: what the weights are (drafter or adapter) or the loops themselves.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Callable, Sequence

import torch

__all__ = [
    "STATE_FILE",
    "latest_checkpoint",
    "load_state",
    "records_fingerprint",
    "save_checkpoint",
]

STATE_FILE = "state.pt"


def latest_checkpoint(out_dir: str | Path) -> Path | None:
    """The newest complete checkpoint (one whose state.pt was written) under out/checkpoints."""
    root = Path(out_dir) / "checkpoints"
    if not root.is_dir():
        return None
    done = sorted(p for p in root.glob("step-*") if (p / STATE_FILE).is_file())
    return done[-1] if done else None


def records_fingerprint(records: Sequence, settings) -> str:
    """16 hex digits over the records' ids and lengths and the JSON of ``settings``."""
    digest = hashlib.sha256()
    for r in records:
        digest.update(r.id.encode())
        digest.update(len(r.input_ids).to_bytes(4, "little"))
    digest.update(json.dumps(settings, sort_keys=True).encode())
    return digest.hexdigest()[:16]


def save_checkpoint(
    out_dir: Path,
    state: dict,
    optimizer,
    scheduler,
    keep: int,
    write_weights: Callable[[Path], object],
) -> Path:
    """Write checkpoint ``state['step']``: weights via ``write_weights(folder)``, then state.pt."""
    root = Path(out_dir) / "checkpoints"
    path = root / f"step-{state['step']:07d}"
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    write_weights(path)
    payload = {
        **state,
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "rng": torch.get_rng_state(),
    }
    tmp = path / (STATE_FILE + ".tmp")
    torch.save(payload, tmp)
    os.replace(tmp, path / STATE_FILE)
    complete = sorted(p for p in root.glob("step-*") if (p / STATE_FILE).is_file())
    for old in complete[: max(0, len(complete) - keep)]:
        shutil.rmtree(old, ignore_errors=True)
    return path


def load_state(checkpoint: Path, fingerprint: str, optimizer, scheduler) -> dict:
    """Restore optimizer, scheduler and RNG from ``checkpoint``; its state dict
    (step, epoch, position).

    Raises ValueError when the checkpoint was made from other data or settings."""
    state = torch.load(checkpoint / STATE_FILE, map_location="cpu", weights_only=False)
    if state.get("data_fingerprint") != fingerprint:
        raise ValueError(
            f"{checkpoint} was trained on other data or settings; "
            "use another output directory or turn resuming off"
        )
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"])
    return state
