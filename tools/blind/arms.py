"""Arms: named sets of enhancement options, written ``NAME[:key=value,...]`` on the command line.

Values are read as what they look like: true/false -> bool, none -> None, 12 -> int, 0.7 -> float,
anything else a string (``--arm light:strength=light``, ``--arm t0:temperature=0``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from . import BlindError

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
RESERVED = ("gpt4o", "wan")  # the reference sources


@dataclass(frozen=True)
class Arm:
    """One arm: its name and the options passed to ``Enhancer.enhance``."""

    name: str
    options: dict[str, Any] = field(default_factory=dict)


def value(text: str) -> Any:
    """An option value read as what it looks like."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text.strip()


def parse(spec: str) -> Arm:
    """``NAME[:key=value,...]`` -> Arm."""
    name, _, rest = spec.partition(":")
    if not NAME.fullmatch(name):
        raise BlindError(f"arm {spec!r}: a name of letters, digits, '_', '.', '-' comes first")
    if name in RESERVED:
        raise BlindError(f"arm {name!r}: that name is a reference's ({', '.join(RESERVED)})")
    options: dict[str, Any] = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, text = item.partition("=")
        if not eq or not key.strip():
            raise BlindError(f"arm {name!r}: {item!r} is not key=value")
        if key.strip() in ("seed", "image"):
            raise BlindError(f"arm {name!r}: {key.strip()} is set by the reading, not by an arm")
        options[key.strip()] = value(text)
    return Arm(name, options)


def parse_all(specs: list[str]) -> list[Arm]:
    """Every arm, names unique."""
    arms = [parse(s) for s in specs]
    names = [a.name for a in arms]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise BlindError(f"arm name(s) given twice: {', '.join(twice)}")
    return arms
