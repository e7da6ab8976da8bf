"""Measured costs of the target's verification pass and the drafter's step on one device.

A ``CostTable`` holds median latencies on grids: target verification as a
function of tree tokens x context length x batch size, and one drafter step
as a function of frontier width x batch size. Lookups interpolate linearly
(and extrapolate from the last two grid points). Tables are JSON files keyed
by device, model fingerprint, dtype and thread count; loading a table made
for another key raises ``CostTableMismatch``.

Not here: measuring (``engine.planning.calibrate``), using the costs (``engine.planning.policy``).
This module does not import torch.
"""

from __future__ import annotations

import bisect
import json
import math
import os
import platform
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

from ..weights.cache_dir import cache_root

# 2: tables of version 1 predate exact half-precision passes (row-by-row attention costs more),
# so they are measured again; 3: denser token grid (calibrate.QUICK), older quick tables miss the
# cost step after 4 rows
FORMAT_VERSION = 3


class CostTableError(ValueError):
    """A cost table file that cannot be used."""


class CostTableMismatch(CostTableError):
    """The table was measured for another device, model, dtype or thread count."""


@dataclass(frozen=True)
class CostKey:
    """What a cost table is valid for."""

    device: str  # e.g. "cpu:AMD EPYC 7B13" or "cuda:NVIDIA H200"
    model: str  # target fingerprint
    dtype: str
    threads: int

    def slug(self) -> str:
        safe = "".join(c if c.isalnum() else "-" for c in self.device).strip("-").lower()
        return f"{safe[:48]}-{self.model}-{self.dtype}-t{self.threads}"


@dataclass
class CostTable:
    """Latency grids in seconds. ``verify[b][c][n]``: batch ``batches[b]``, context ``contexts[c]``,
    ``tokens[n]`` tokens per sequence in the pass; ``draft[b][w]``: one drafter step, width
    ``widths[w]``."""

    key: CostKey
    tokens: list[int]
    contexts: list[int]
    batches: list[int]
    verify: list[list[list[float]]]
    widths: list[int]
    draft: list[list[float]]
    quick: bool = False  # made by the automatic quick calibration
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("tokens", "contexts", "batches", "widths"):
            grid = getattr(self, name)
            if not grid or any(b <= a for a, b in zip(grid, grid[1:])):
                raise CostTableError(
                    f"cost table grid '{name}' must be non-empty and increasing, got {grid}"
                )
        shape = (len(self.batches), len(self.contexts), len(self.tokens))
        if (
            len(self.verify) != shape[0]
            or any(len(c) != shape[1] for c in self.verify)
            or any(len(n) != shape[2] for c in self.verify for n in c)
        ):
            raise CostTableError(f"cost table 'verify' must have shape {shape}")
        if len(self.draft) != len(self.batches) or any(
            len(w) != len(self.widths) for w in self.draft
        ):
            raise CostTableError(
                f"cost table 'draft' must have shape {(len(self.batches), len(self.widths))}"
            )
        values = [s for b in self.verify for c in b for s in c] + [s for b in self.draft for s in b]
        if not all(isinstance(s, (int, float)) and math.isfinite(s) and s >= 0 for s in values):
            raise CostTableError(
                "cost table latencies must be finite, non-negative numbers of seconds"
            )

    # ---- lookups ---------------------------------------------------------------------------------
    def verify_seconds(self, tokens: int, context: int, batch: int = 1) -> float:
        """Latency of one target pass over ``tokens`` new tokens per sequence after ``context``
        cached ones."""

        def at_batch(b: int) -> float:
            rows = self.verify[b]
            return _interp(
                self.contexts, [_interp(self.tokens, row, tokens) for row in rows], context
            )

        return max(
            _interp(self.batches, [at_batch(b) for b in range(len(self.batches))], batch), 1e-6
        )

    def draft_seconds(self, width: int, batch: int = 1) -> float:
        """Latency of one drafter step over a frontier of ``width`` nodes per sequence."""
        if width <= 0:
            return 0.0
        return max(
            _interp(self.batches, [_interp(self.widths, row, width) for row in self.draft], batch),
            1e-6,
        )

    # ---- files -----------------------------------------------------------------------------------
    def to_json(self) -> dict:
        out = asdict(self)
        out["version"] = FORMAT_VERSION
        return out

    @classmethod
    def from_json(cls, raw: dict) -> "CostTable":
        if not isinstance(raw, dict) or raw.get("version") != FORMAT_VERSION:
            raise CostTableError(f"not a version-{FORMAT_VERSION} cost table")
        try:
            fields = {
                k: raw[k] for k in ("tokens", "contexts", "batches", "verify", "widths", "draft")
            }
            return cls(
                key=CostKey(**raw["key"]),
                quick=bool(raw.get("quick", False)),
                meta=dict(raw.get("meta") or {}),
                **fields,
            )
        except (KeyError, TypeError) as exc:
            raise CostTableError(f"malformed cost table: {exc}") from exc

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=1))
        os.replace(tmp, path)
        return path

    @classmethod
    def load(cls, path: str | Path, expect: CostKey | None = None) -> "CostTable":
        """Read a table; with ``expect``, refuse one measured for another key."""
        path = Path(path)
        try:
            raw = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise CostTableError(f"cannot read cost table {path}: {exc}") from exc
        table = cls.from_json(raw)
        if expect is not None and table.key != expect:
            raise CostTableMismatch(
                f"cost table {path} was measured for {table.key}, not {expect}; "
                "run 'promptx calibrate' again"
            )
        return table


def _interp(xs: Sequence[int], ys: Sequence[float], x: float) -> float:
    """Piecewise-linear through (xs, ys). Below the grid: the first value; above it: linear
    extrapolation from the last two points, never below the last value (costs grow)."""
    if len(xs) == 1 or x <= xs[0]:
        return float(ys[0])
    i = min(bisect.bisect_right(xs, x) - 1, len(xs) - 2)
    x0, x1, y0, y1 = xs[i], xs[i + 1], ys[i], ys[i + 1]
    value = float(y0 + (y1 - y0) * (x - x0) / (x1 - x0))
    return max(value, float(ys[-1])) if x > xs[-1] else value


def default_table_dir() -> Path:
    """Where cost tables live: ``calibration`` under the engine's cache root."""
    return cache_root() / "calibration"


def table_path(key: CostKey, directory: str | Path | None = None) -> Path:
    return Path(directory or default_table_dir()) / f"{key.slug()}.json"


def cpu_name() -> str:
    """The CPU's model name (Linux /proc/cpuinfo), else the platform's processor string."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"
